"""The budget ledger on a shared PostgreSQL server: every gateway replica counts against one
limit.

The statements and rules are the SQLite ledger's (governance.stores._budgets_sql); what differs
is how a writer excludes the others. SQLite's `BEGIN IMMEDIATE` locks the whole file; here a
writer takes a transaction-scoped advisory lock per (budget, key) it touches, in ascending lock
order, before it counts: a second reserve of the same key - from any process on any host -
waits until the first commits, then counts the committed row (READ COMMITTED takes a fresh
snapshot per statement, after the lock). Reserves of other keys run in parallel. One fixed
order means no deadlock; no retry loop is needed, unlike SERIALIZABLE, whose serialisation
failures under a hot key would each cost a round trip and a retry budget that could run out.

Connection: one per store behind a lock (like the SQLite store), opened when the store opens
and again after the server dropped it, so the gateway recovers when the server returns. The
schema must be at the code's version (`proctor store migrate`). Every failure - driver,
network, clock - is a BudgetStoreError, which the firewall turns into "do not execute"; a
commit whose outcome is lost with the connection leaves at most a `reserved` row, which keeps
counting (never counted twice: a retry is a new call with its own row).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Final

from governance.core._clock import Clock, SystemClock
from governance.core._closing import Closing
from governance.stores._budgets_model import BudgetResetRefused, BudgetStoreError
from governance.stores._budgets_sql import BudgetKey, SqlBudgetLedger
from governance.stores._postgres import PostgresTarget, connect
from governance.stores._postgres_clock import ClockWatch, SkewSetting, failure_reason
from governance.stores._postgres_fork import abandon, follow_forks
from governance.stores._postgres_schema import require_current

# The first half of every budget advisory lock key ("BUDG"): the second is the key's hash.
_LOCK_SPACE: Final = 0x42554447


def lock_id(key: BudgetKey) -> int:
    """A stable signed 32-bit id for (budget id, key); a collision only serialises two keys."""
    digest = hashlib.blake2b("\x00".join(key).encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big", signed=True)


class PostgresBudgetLedger(SqlBudgetLedger, Closing):
    """The destructive-action ledger in a PostgreSQL database migrated by `proctor store
    migrate`. `busy_timeout` bounds every lock wait and statement (seconds), as SQLite's does."""

    _marker = "%s"
    _row_lock = " FOR UPDATE"

    def __init__(
        self,
        target: PostgresTarget,
        *,
        clock: Clock | None = None,
        busy_timeout: float = 10.0,
        max_clock_skew: SkewSetting = "auto",
    ) -> None:
        self.target = target
        self._clock = clock or SystemClock()
        self._max_clock_skew = max_clock_skew
        self._clock_watch = ClockWatch(self._clock, target, max_clock_skew)
        self._timeout_ms = max(int(busy_timeout * 1000), 1)
        self._lock = threading.Lock()
        self._open = True
        self._conn: Any = None
        self._pid = os.getpid()  # the process whose connection `_conn` is
        follow_forks(self)
        try:
            self._conn = self._connect()
        except Exception as exc:
            raise BudgetStoreError(
                f"cannot open budget store {target.display}: {failure_reason(exc, self.target)}"
            ) from exc

    def _connect(self) -> Any:
        conn = connect(self.target)
        try:
            require_current(conn, self.target)
            self._clock_watch.check(conn)
            # A lock held by a stuck writer, or a server that stops answering, fails the call
            # after the timeout instead of hanging the agent.
            conn.execute(f"SET lock_timeout = {self._timeout_ms}")
            conn.execute(f"SET statement_timeout = {self._timeout_ms}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _own_process(self) -> None:
        if self._pid != os.getpid():  # forked by other means than os.fork()
            self._in_forked_child()

    def _in_forked_child(self) -> None:
        """In a forked child: the parent's connection stays the parent's (never closed or used
        here; see governance.stores._postgres_fork); the next call connects again."""
        abandon(self._conn)
        self._conn = None
        self._lock = threading.Lock()
        self._pid = os.getpid()

    @contextlib.contextmanager
    def _session(self, doing: str) -> Iterator[Any]:
        self._own_process()
        with self._lock:
            if not self._open:
                raise BudgetStoreError(f"budget store {self.target.display} is closed")
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = self._connect()  # the server came back (or never left)
                else:  # a clock stepped since the last comparison is caught here
                    self._clock_watch.check_if_due(self._conn)
                yield self._conn
            except (BudgetStoreError, BudgetResetRefused):
                raise
            except Exception as exc:
                # Fail closed on anything; a dropped connection is replaced on the next call.
                if self._conn is not None and (self._conn.broken or self._conn.closed):
                    with contextlib.suppress(Exception):
                        self._conn.close()
                    self._conn = None
                why = failure_reason(exc, self.target)
                raise BudgetStoreError(
                    f"budget store {self.target.display} could not {doing}: {why}"
                ) from exc

    @contextlib.contextmanager
    def _transaction(
        self, conn: Any, *, write: bool, keys: Sequence[BudgetKey] = ()
    ) -> Iterator[None]:
        with conn.transaction():
            if write:
                # Ascending order, every writer: no two can wait on each other in a cycle.
                for lock in sorted({lock_id(key) for key in keys}):
                    conn.execute(
                        "SELECT pg_advisory_xact_lock(%s::int4, %s::int4)", (_LOCK_SPACE, lock)
                    )
            else:  # one snapshot for every count a read makes
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield

    def close(self) -> None:
        self._own_process()
        with self._lock:
            self._open = False
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    self._conn.close()
                self._conn = None
