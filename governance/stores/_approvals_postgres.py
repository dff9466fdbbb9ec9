"""Approval requests on a shared PostgreSQL server: the SQLite store's arbiter, on the server.

The statements are the SQLite store's (`SqlApprovals`): every state change is ONE conditional
`UPDATE ... WHERE id = ? AND status = 'pending'` (plus `consumed = 0` for execution), which the
server evaluates atomically per row, so among reviewers on any number of gateways, the expiry
sweep and reconciliation exactly one wins and `consume` is True once. Raw arguments are sealed
as the SQLite store seals them (bound to the request; encrypted with `key` when given).

Ids (`apr-1`, `apr-2`, ...) are `max(seq) + 1` read and inserted in one transaction under an
advisory lock, so concurrent creators on several hosts never share an id and never leave a gap.
`wait` polls (every `poll_interval` seconds), as the SQLite store does: no LISTEN connection
is held per waiter. Any driver failure, a killed or unreachable server included, is an
ApprovalStoreError: callers fail closed (nothing is approved, nothing is consumed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from governance.core._clock import Clock
from governance.stores._approvals import INSERT, ApprovalRows, ApprovalStoreError, SqlApprovals
from governance.stores._postgres import PostgresTarget
from governance.stores._postgres_store import PostgresStore

# An arbitrary constant: the advisory lock every creator takes to allocate the next id.
_ID_LOCK: Final = 0x50524F41  # "PROA"


class PostgresApprovalStore(PostgresStore, SqlApprovals):
    """Approval requests in one PostgreSQL database, shared by every gateway that opens it."""

    _label = "approval store"
    _error = ApprovalStoreError

    def __init__(
        self,
        target: PostgresTarget,
        *,
        clock: Clock | None = None,
        default_ttl_seconds: float = 300.0,
        key: bytes | None = None,
    ) -> None:
        self._where = target.display
        ApprovalRows.__init__(self, clock=clock, default_ttl_seconds=default_ttl_seconds, key=key)
        PostgresStore.__init__(self, target)

    def _insert(self, conn: Any, row: Callable[[int], tuple[Any, ...]]) -> str:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(?)", (_ID_LOCK,))
            last = conn.execute("SELECT coalesce(max(seq), 0) FROM approvals").fetchone()
            values = row(int(last[0]) + 1)
            conn.execute(INSERT, values)
        return str(values[1])

    def close(self) -> None:
        self._closed.set()  # wakes every waiter: nothing more will be decided here
        super().close()
