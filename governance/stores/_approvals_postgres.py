"""Approval requests on a shared PostgreSQL server: the SQLite store's arbiter, on the server.

The statements are the SQLite store's (`SqlApprovals`): every state change is ONE conditional
`UPDATE ... WHERE id = ? AND status = 'pending'` (plus `consumed = 0` for execution), which the
server evaluates atomically per row, so among reviewers on any number of gateways, the expiry
sweep and reconciliation exactly one wins and `consume` is True once. Raw arguments are sealed
as the SQLite store seals them (bound to the request; encrypted with `key` when given).

Ids (`apr-1`, `apr-2`, ...) are `max(seq) + 1` read and inserted in one transaction under an
advisory lock, so concurrent creators on several hosts never share an id and never leave a gap.
`wait` polls (every `poll_interval` seconds), as the SQLite store does: no LISTEN connection
is held per waiter.

Gateways on several machines share the rows, but a process token (`pid:start ticks`) means
something only on its own machine: the store keeps each waiter's and writer's token with the
machine it belongs to (`this_machine()`: host name and boot id). Start-up reconciliation
judges only this machine's tokens (a token from before this machine's last boot is dead); a
request awaited on another machine is left to that machine's start-up, and to its deadline.

Any driver failure, a killed or unreachable server included, is an ApprovalStoreError: callers
fail closed (nothing is approved, nothing is consumed).
"""

from __future__ import annotations

import builtins
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from governance.core._clock import Clock
from governance.core._process_token import current_process_token, process_is_alive
from governance.stores._approvals import (
    INSERT,
    ApprovalRequest,
    ApprovalRows,
    ApprovalStoreError,
    SqlApprovals,
)
from governance.stores._postgres import PostgresTarget
from governance.stores._postgres_store import PostgresStore

# An arbitrary constant: the advisory lock every creator takes to allocate the next id.
_ID_LOCK: Final = 0x50524F41  # "PROA"
# Between a process token and its machine in the `waiter` and `in_flight_by` columns.
_ON: Final = " on "
_WAITER: Final = 22  # the waiter's index in a row as _parse reads it (_COLUMNS)


def this_machine() -> str:
    """`host/boot id`: which machine a process token belongs to, and since which boot."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        boot = "unknown-boot"
    return f"{socket.gethostname()}/{boot}"


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
        self._machine = this_machine()
        ApprovalRows.__init__(self, clock=clock, default_ttl_seconds=default_ttl_seconds, key=key)
        PostgresStore.__init__(self, target)

    # -- process tokens, qualified by their machine ---------------------------------------

    def _here(self, token: str) -> str:
        return f"{token}{_ON}{self._machine}"

    def _owner(self, awaiting: str | None) -> str | None:  # type: ignore[override]
        return self._here(current_process_token()) if awaiting is not None else None

    def _parse(self, row: tuple[Any, ...]) -> ApprovalRequest:
        """A request shows its waiter's token as given, without the machine."""
        waiter = row[_WAITER]
        if isinstance(waiter, str) and _ON in waiter:
            row = (*row[:_WAITER], waiter.rsplit(_ON, 1)[0], *row[_WAITER + 1 :])
        return super()._parse(row)

    def _judge(self, is_alive: Callable[[str], bool]) -> Callable[[str], bool]:
        """`is_alive` for stored tokens: asked only about this machine's processes."""
        host = self._machine.split("/", 1)[0]

        def alive(stored: str) -> bool:
            token, on, machine = stored.rpartition(_ON)
            if not on:
                return is_alive(stored)
            if machine == self._machine:
                return token == current_process_token() or is_alive(token)
            # Another boot of this host: every process of it is gone. Another machine: only
            # that machine can tell, so its requests are left alone here.
            return machine.split("/", 1)[0] != host

        return alive

    def _stored(self, waiter: str | None) -> str | None:
        return None if waiter is None else self._here(waiter)

    def reconcile(
        self, *, is_alive: Callable[[str], bool] = process_is_alive
    ) -> builtins.list[str]:
        return super().reconcile(is_alive=self._judge(is_alive))

    def in_flight(
        self, *, is_alive: Callable[[str], bool] = process_is_alive
    ) -> builtins.list[ApprovalRequest]:
        return super().in_flight(is_alive=self._judge(is_alive))

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
