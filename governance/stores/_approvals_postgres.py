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

Gateways on several machines share the rows, and a process token (`pid:start ticks`) means
something only in its own PID namespace; host names and boot ids collide (cloned VMs, pods with
one `hostname`, containers on one kernel). So each store object registers a random instance
id with a lease row in `proctor_instances` (LEASE_SECONDS, renewed every RENEW_SECONDS by a
daemon thread, times on the SERVER's clock), and keeps every waiter's and writer's token with
its instance id. Reconciliation judges another instance's tokens alive exactly while its lease
has not lapsed; its own tokens by process liveness, as the SQLite store does.

Any driver failure, a killed or unreachable server included, is an ApprovalStoreError: callers
fail closed (nothing is approved, nothing is consumed).
"""

from __future__ import annotations

import builtins
import contextlib
import secrets
import threading
from collections.abc import Callable
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
from governance.stores._postgres_clock import SkewSetting
from governance.stores._postgres_store import Dialect, PostgresStore

# An arbitrary constant: the advisory lock every creator takes to allocate the next id.
_ID_LOCK: Final = 0x50524F41  # "PROA"
# A gateway's lease on the server's clock, and how often it is renewed (two renewals may fail
# before another gateway sees it lapse).
LEASE_SECONDS: Final = 30.0
RENEW_SECONDS: Final = 10.0
# Between a process token and its gateway instance in the `waiter` and `in_flight_by` columns.
_ON: Final = " on "
_WAITER: Final = 22  # the waiter's index in a row as _parse reads it (_COLUMNS)


def new_instance_id() -> str:
    """A fresh id per store object: a restarted process never inherits its predecessor's."""
    return f"gw-{secrets.token_hex(12)}"


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
        max_clock_skew: SkewSetting = "auto",
    ) -> None:
        self._where = target.display
        self._instance = new_instance_id()
        self._heartbeat_stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        # The lease is taken on the first connection (here, or a forked child's first call)
        # before any request can carry this instance's id.
        self._lease_pending = True
        ApprovalRows.__init__(self, clock=clock, default_ttl_seconds=default_ttl_seconds, key=key)
        PostgresStore.__init__(self, target, max_clock_skew=max_clock_skew)

    # -- the instance lease ---------------------------------------------------------------

    def _connection(self, *, compare_clocks: bool = True) -> Any:
        conn = super()._connection(compare_clocks=compare_clocks)
        if self._lease_pending:
            try:
                self._write_lease(Dialect(conn), first=True)
            except BaseException:
                self._drop()  # nothing may run on this instance without its lease
                raise
            self._lease_pending = False
            self._heartbeat = threading.Thread(
                target=self._beat, name=f"proctor-lease-{self._instance}", daemon=True
            )
            self._heartbeat.start()
        return conn

    def _write_lease(self, conn: Dialect, *, first: bool = False) -> None:
        if first:  # leases long lapsed tell nothing a missing row does not: tidy them
            conn.execute(
                "DELETE FROM proctor_instances "
                "WHERE lease_until < clock_timestamp() - make_interval(days => 1)"
            )
        conn.execute(
            "INSERT INTO proctor_instances (instance_id, lease_until) "
            "VALUES (?, clock_timestamp() + make_interval(secs => ?)) "
            "ON CONFLICT (instance_id) DO UPDATE SET lease_until = EXCLUDED.lease_until",
            (self._instance, float(LEASE_SECONDS)),
        )

    def _renew_lease(self) -> None:
        # The lease is liveness on the server's clock: renewed even while the clocks disagree.
        with self._session("renew this gateway's lease", compare_clocks=False) as conn:
            self._write_lease(conn)

    def _heartbeat_tick(self) -> None:
        """Renew the lease, then compare the clocks (a step since the last comparison); a
        disagreement leaves the comparison due, so every later call fails closed until the
        clocks agree again."""
        with contextlib.suppress(ApprovalStoreError):  # retried; the lease covers two misses
            self._renew_lease()
        self._clock_watch.make_due()
        with contextlib.suppress(ApprovalStoreError):
            with self._session("compare its clock with the server's"):
                pass

    def _beat(self) -> None:
        stop = self._heartbeat_stop
        while not stop.wait(RENEW_SECONDS):
            self._heartbeat_tick()

    def _stop_heartbeat(self) -> None:
        self._heartbeat_stop.set()
        beat = self._heartbeat
        if beat is not None and beat is not threading.current_thread():
            beat.join()

    def _in_forked_child(self) -> None:
        """A forked child is a gateway of its own: a fresh instance id, whose lease and
        heartbeat start with its first call; the parent's lease is never touched here."""
        super()._in_forked_child()
        self._instance = new_instance_id()
        self._heartbeat_stop = threading.Event()  # the parent's thread did not survive
        self._heartbeat = None
        self._lease_pending = True
        was_closed = self._closed.is_set()
        self._closed = threading.Event()  # its lock may have been held by a parent thread
        if was_closed:
            self._closed.set()

    def _lease_alive(self, instance: str) -> bool:
        with self._session("read a gateway's lease") as conn:
            row = conn.execute(
                "SELECT lease_until > clock_timestamp() FROM proctor_instances "
                "WHERE instance_id = ?",
                (instance,),
            ).fetchone()
        return bool(row and row[0])

    # -- process tokens, qualified by their instance --------------------------------------

    def _here(self, token: str) -> str:
        return f"{token}{_ON}{self._instance}"

    def _owner(self, awaiting: str | None) -> str | None:  # type: ignore[override]
        return self._here(current_process_token()) if awaiting is not None else None

    def _parse(self, row: tuple[Any, ...]) -> ApprovalRequest:
        """A request shows its waiter's token as given, without the instance."""
        waiter = row[_WAITER]
        if isinstance(waiter, str) and _ON in waiter:
            row = (*row[:_WAITER], waiter.rsplit(_ON, 1)[0], *row[_WAITER + 1 :])
        return super()._parse(row)

    def _judge(self, is_alive: Callable[[str], bool]) -> Callable[[str], bool]:
        """`is_alive` for stored tokens: this instance's by process, others' by lease."""

        def alive(stored: str) -> bool:
            token, on, instance = stored.rpartition(_ON)
            if not on:
                return is_alive(stored)
            if instance == self._instance:
                return token == current_process_token() or is_alive(token)
            # Another instance (here or elsewhere): alive while its lease holds on the
            # server's clock. An id without a lease row (lapsed and gone, or written before
            # leases existed) has nobody renewing it.
            return self._lease_alive(instance)

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
        self._own_process()  # a child's close never ends its parent's lease
        self._closed.set()  # wakes every waiter: nothing more will be decided here
        self._stop_heartbeat()
        if not self._lease_pending:
            # Nobody waits here any more: its requests are another start-up's to expire.
            with contextlib.suppress(ApprovalStoreError):
                with self._session("end this gateway's lease") as conn:
                    conn.execute(
                        "DELETE FROM proctor_instances WHERE instance_id = ?", (self._instance,)
                    )
        super().close()
