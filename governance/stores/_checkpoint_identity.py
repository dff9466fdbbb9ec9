"""The identity of an audit log: a random id the log keeps, so a checkpoint names its log.

A checkpoint verified against another log (a copy of last month's file, the staging gateway's)
must say so, not report every run as deleted. The SQLite log keeps its id in a one-row table
created by the first checkpoint (`INSERT ... WHERE NOT EXISTS` in one `BEGIN IMMEDIATE`, so
two processes checkpointing at once agree on one id); the PostgreSQL log in a one-row table of
its database (`INSERT ... ON CONFLICT DO NOTHING`: every gateway on the server agrees on one
id, whichever wrote the checkpoint). A memory log's id lives as long as it.
The id is not a secret and not a defence: copying it into another file gains an attacker
nothing, since every run's head must still match.
"""

from __future__ import annotations

import secrets
import sqlite3
import weakref
from typing import Final

from governance.stores._audit import AuditLog
from governance.stores._audit_postgres import PostgresAuditLog
from governance.stores._backends import AuditBackend
from governance.stores._sqlite import transaction

_TABLE: Final = "audit_log_identity"
_MEMORY_IDS: weakref.WeakKeyDictionary[object, str] = weakref.WeakKeyDictionary()


def _new_id() -> str:
    return "log-" + secrets.token_hex(16)


def ensure_log_id(log: AuditBackend) -> str:
    """The log's id, created on first use (the SQLite log must be writable then)."""
    if isinstance(log, PostgresAuditLog):
        with log._session("record its identity") as conn:
            conn.execute(
                f"INSERT INTO {_TABLE} (log_id) VALUES (?) ON CONFLICT DO NOTHING", (_new_id(),)
            )
            row = conn.execute(f"SELECT log_id FROM {_TABLE}").fetchone()
        return str(row[0])
    if not isinstance(log, AuditLog):
        return _MEMORY_IDS.setdefault(log, _new_id())
    with log._session("record its identity") as conn:
        with transaction(conn):
            conn.execute(f"CREATE TABLE IF NOT EXISTS {_TABLE} (log_id TEXT NOT NULL)")
            conn.execute(
                f"INSERT INTO {_TABLE} (log_id) SELECT ? WHERE NOT EXISTS (SELECT 1 FROM {_TABLE})",
                (_new_id(),),
            )
            row = conn.execute(f"SELECT log_id FROM {_TABLE} LIMIT 1").fetchone()
            conn.execute("COMMIT")
    return str(row[0])


def read_log_id(log: AuditBackend) -> str | None:
    """The log's id, or None when it has none (never checkpointed, or the row was deleted)."""
    if isinstance(log, PostgresAuditLog):
        with log._session("read its identity") as conn:
            rows = conn.execute(f"SELECT log_id FROM {_TABLE}").fetchall()
        return str(rows[0][0]) if len(rows) == 1 else None
    if not isinstance(log, AuditLog):
        return _MEMORY_IDS.get(log)
    with log._session("read its identity") as conn:
        try:
            rows = conn.execute(f"SELECT log_id FROM {_TABLE}").fetchall()
        except sqlite3.OperationalError:  # no such table: never checkpointed
            return None
    if len(rows) != 1 or not isinstance(rows[0][0], str):
        return None
    return rows[0][0]
