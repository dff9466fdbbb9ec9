"""The three stores on one PostgreSQL database, as a gateway opens them.

The server and its schema are checked once, before any store opens, so a gateway pointed at an
unreachable server or an unmigrated database refuses to start with that error itself
(PostgresUnavailable, StoreSchemaError: the CLI's exit 69 and 3), not with three store errors.
The driver (psycopg) is imported when the first connection is made: it costs nothing to a
gateway on SQLite or memory.
"""

from __future__ import annotations

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
    from governance.stores._approvals_postgres import PostgresApprovalStore
    from governance.stores._audit_postgres import PostgresAuditLog
    from governance.stores._budgets_postgres import PostgresBudgetLedger

    opened: list[Any] = []
    try:
        audit = PostgresAuditLog(target, key=audit_key, clock=clock)
        opened.append(audit)
        approvals = PostgresApprovalStore(
            target, clock=clock, default_ttl_seconds=default_ttl_seconds, key=approvals_key
        )
        opened.append(approvals)
        budgets = PostgresBudgetLedger(target, clock=clock)
    except BaseException:
        for store in opened:
            store.close()
        raise
    return PostgresStores(audit, approvals, budgets)
