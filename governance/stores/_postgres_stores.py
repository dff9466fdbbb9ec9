"""The three stores on one PostgreSQL database, as a gateway opens them.

The server and its schema are checked once, before any store opens, so a gateway pointed at an
unreachable server or an unmigrated database refuses to start with that error itself
(PostgresUnavailable, StoreSchemaError: the CLI's exit 69 and 3), not with three store errors.
Each store module is imported here, on first use: psycopg and the Postgres stores cost nothing
to a gateway on SQLite or memory.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from governance.core._clock import Clock
from governance.stores._postgres import PostgresTarget, PostgresUnavailable, connect, first_line
from governance.stores._postgres_schema import require_current

if TYPE_CHECKING:
    from governance.stores._backends import ApprovalBackend, AuditBackend, BudgetBackend


def check_server(target: PostgresTarget) -> None:
    """Reach the server and refuse a schema other than the code's (nothing is written)."""
    conn = connect(target)
    try:
        try:
            require_current(conn, target)
        except Exception as exc:
            if isinstance(exc, PostgresUnavailable) or not _driver_error(exc):
                raise
            raise PostgresUnavailable(
                f"cannot read the PostgreSQL store {target.display}: {first_line(exc, target)}"
            ) from exc
    finally:
        conn.close()


def _driver_error(exc: BaseException) -> bool:
    from governance.stores._postgres import psycopg

    return isinstance(exc, psycopg().Error)


def _class(module: str, name: str) -> Any:
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True, slots=True)
class PostgresStores:
    audit: AuditBackend
    approvals: ApprovalBackend
    budgets: BudgetBackend


def open_postgres_stores(
    target: PostgresTarget,
    *,
    clock: Clock,
    default_ttl_seconds: float,
    audit_key: bytes | None,
    approvals_key: bytes | None,
) -> PostgresStores:
    """Audit log, approvals and budgets on one database; a half-opened set is closed again."""
    check_server(target)
    from governance.stores._budgets_postgres import PostgresBudgetLedger

    # By name: the approvals and audit backends are built beside this one (same constructor
    # convention: the target, then the SQLite class's keyword arguments).
    approvals_class = _class("governance.stores._approvals_postgres", "PostgresApprovalStore")
    audit_class = _class("governance.stores._audit_postgres", "PostgresAuditLog")

    opened: list[Any] = []
    try:
        audit = audit_class(target, key=audit_key, clock=clock)
        opened.append(audit)
        approvals = approvals_class(
            target, clock=clock, default_ttl_seconds=default_ttl_seconds, key=approvals_key
        )
        opened.append(approvals)
        budgets = PostgresBudgetLedger(target, clock=clock)
    except BaseException:
        for store in opened:
            store.close()
        raise
    return PostgresStores(audit, approvals, budgets)
