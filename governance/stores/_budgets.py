"""Destructive-action budgets: a SQLite ledger that stops a looping agent after N counted calls.

A reservation counts and inserts in one `BEGIN IMMEDIATE` transaction, so threads and processes
sharing the file can never overshoot a limit. A reset inserts a watermark approved by two people
and never deletes or rewrites a ledger row: what happened before stays as evidence. Every
failure is a `BudgetStoreError`, which the firewall turns into "do not execute". The file is
durable per its mode (`fsync` or `os`, see governance.stores._sqlite). The statements are
shared with the PostgreSQL ledger (governance.stores._budgets_sql); the memory backend
(`MemoryBudgetLedger`) keeps the same rules in Python.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

from governance.core._clock import Clock, SystemClock
from governance.stores._budgets_model import (
    COUNTED,
    SCOPE_ORDER,
    SETTLE_OUTCOMES,
    Budget,
    BudgetDenial,
    BudgetReservation,
    BudgetReset,
    BudgetResetRefused,
    BudgetScope,
    BudgetStatus,
    BudgetStoreError,
    LedgerRow,
    LedgerStatus,
    SettleOutcome,
    check_reset,
    check_unique,
    epoch_us,
    from_us,
    refuse_agent,
    refuse_look_alikes,
    restrictiveness,
)
from governance.stores._budgets_sql import (
    FIXED_COLUMNS,
    BudgetKey,
    SqlBudgetLedger,
    create_tables,
)
from governance.stores._sqlite import (
    Durability,
    SqliteStore,
    check_durability,
    open_connection,
    transaction,
)

__all__ = [
    "COUNTED",
    "SCOPE_ORDER",
    "SETTLE_OUTCOMES",
    "Budget",
    "BudgetDenial",
    "BudgetReservation",
    "BudgetReset",
    "BudgetResetRefused",
    "BudgetScope",
    "BudgetStatus",
    "BudgetStore",
    "BudgetStoreError",
    "LedgerRow",
    "LedgerStatus",
    "SettleOutcome",
    "check_reset",
    "check_unique",
    "epoch_us",
    "from_us",
    "refuse_agent",
    "refuse_look_alikes",
    "restrictiveness",
]

_LEDGER_TABLE, _RESETS_TABLE = create_tables(
    "CREATE TABLE IF NOT EXISTS", "INTEGER PRIMARY KEY AUTOINCREMENT", "INTEGER"
)
_SCHEMA: Final[tuple[str, ...]] = (
    _LEDGER_TABLE,
    "CREATE INDEX IF NOT EXISTS budget_ledger_window "
    "ON budget_ledger (budget_id, key, created_us)",
    _RESETS_TABLE,
    "CREATE INDEX IF NOT EXISTS budget_resets_key ON budget_resets (budget_id, key)",
    # Evidence is append-only: rows are never deleted, and a ledger row changes only once,
    # from reserved to its outcome.
    """
    CREATE TRIGGER IF NOT EXISTS budget_ledger_never_deleted BEFORE DELETE ON budget_ledger
    BEGIN SELECT RAISE(ABORT, 'budget ledger rows are evidence and are never deleted'); END
    """,
    f"""
    CREATE TRIGGER IF NOT EXISTS budget_ledger_settled_once BEFORE UPDATE ON budget_ledger
    WHEN OLD.status <> 'reserved' OR NEW.status NOT IN ('executed', 'released', 'unknown')
        OR {" OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in FIXED_COLUMNS)}
    BEGIN SELECT RAISE(ABORT, 'a budget ledger row is settled once and only its outcome changes');
    END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS budget_resets_never_updated BEFORE UPDATE ON budget_resets
    BEGIN SELECT RAISE(ABORT, 'budget resets are evidence and are never changed'); END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS budget_resets_never_deleted BEFORE DELETE ON budget_resets
    BEGIN SELECT RAISE(ABORT, 'budget resets are evidence and are never deleted'); END
    """,
)


def _create_schema(conn: sqlite3.Connection) -> None:
    with transaction(conn):
        for statement in _SCHEMA:
            conn.execute(statement)
        conn.execute("COMMIT")


class BudgetStore(SqliteStore, SqlBudgetLedger):
    """Budget counts in one SQLite file (WAL), shared safely by threads and processes.

    One connection per store behind a lock; `BEGIN IMMEDIATE` plus a busy timeout between
    connections. Time comes from the injected clock; timestamps are stored as UTC epoch
    microseconds (compared) and ISO-8601 text (read by people).
    """

    _label = "budget store"
    _error = BudgetStoreError
    # Fail closed on anything: a clock or a row that cannot be read must never let a call by.
    _wrapped = (Exception,)
    _passed_on = (BudgetStoreError, BudgetResetRefused)

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        busy_timeout: float = 10.0,
        durability: Durability = "fsync",
    ) -> None:
        self.path = Path(path)
        self.durability = check_durability(durability)
        self._clock = clock or SystemClock()
        super().__init__()
        try:
            self._conn = self._connect(busy_timeout)
        except Exception as exc:
            raise BudgetStoreError(f"cannot open budget store {self.path}: {exc}") from exc

    def _connect(self, busy_timeout: float) -> sqlite3.Connection:
        # fsync: a reservation is on disk before the call it guards may run.
        conn = open_connection(self.path, durability=self.durability, busy_timeout=busy_timeout)
        try:
            _create_schema(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    @contextlib.contextmanager
    def _transaction(
        self, conn: sqlite3.Connection, *, write: bool, keys: Sequence[BudgetKey] = ()
    ) -> Iterator[None]:
        # A writer takes the whole file (`BEGIN IMMEDIATE`): every key is held alone.
        with transaction(conn, "BEGIN IMMEDIATE" if write else "BEGIN"):
            yield
            conn.execute("COMMIT")
