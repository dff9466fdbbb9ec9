"""One connection to the PostgreSQL store behind a lock, re-opened after the server comes back.

What the SQLite stores' `SqliteStore` is for a file: the store's threads share one connection
(autocommit: a store opens its transactions itself), every driver failure becomes the store's
own error naming the server (never its password) and what the store was doing, so callers fail
closed on one kind of error. A connection the driver reports broken (the server was killed or
went away mid-call) is dropped; the next call connects again and checks the schema version
again, so a store recovers by itself when the server returns. A call whose reply was lost is
reported as failed even when the server may have committed it: callers treat it as not done.

The shared SQL is written with `?` markers (SQLite's); `Dialect` turns them into psycopg's
`%s`, so the stores' statements are written once.
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from governance.core._clock import Clock
from governance.core._closing import Closing
from governance.stores._postgres import (
    PostgresTarget,
    PostgresUnavailable,
    connect,
    first_line,
    psycopg,
)
from governance.stores._postgres_clock import ClockWatch, SkewSetting, failure_reason
from governance.stores._postgres_fork import abandon, follow_forks
from governance.stores._postgres_schema import (
    MIGRATIONS,
    Migration,
    StoreSchemaError,
    require_current,
)


@functools.lru_cache(maxsize=256)
def placeholders(sql: str) -> str:
    """`?` markers as psycopg's `%s` (the shared SQL holds no `%` and no `?` in literals)."""
    if "%" in sql:
        raise ValueError(f"shared SQL must not contain '%': {sql[:60]!r}")
    return sql.replace("?", "%s")


class Dialect:
    """A psycopg connection that takes the shared SQL (`?` markers)."""

    def __init__(self, conn: Any) -> None:
        self.raw = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.raw.execute(placeholders(sql), params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.raw.cursor() as cursor:
            cursor.executemany(placeholders(sql), rows)

    def transaction(self) -> contextlib.AbstractContextManager[Any]:
        return self.raw.transaction()  # type: ignore[no-any-return]


class PostgresStore(Closing):
    """The connection of one store object. Subclasses set `_label` and `_error`; errors they
    raise on purpose inside a session (not found, conflict) pass through unchanged."""

    _label: str = "store"
    _error: type[Exception] = Exception

    _clock: Clock  # set by the subclass before this __init__

    def __init__(
        self,
        target: PostgresTarget,
        *,
        migrations: Sequence[Migration] = MIGRATIONS,
        max_clock_skew: SkewSetting = "auto",
    ) -> None:
        if not isinstance(target, PostgresTarget):
            raise TypeError(f"a PostgreSQL store needs a PostgresTarget, not {target!r}")
        self.target = target
        self._migrations = tuple(migrations)
        self._max_clock_skew = max_clock_skew
        self._clock_watch = ClockWatch(self._clock, target, max_clock_skew)
        self._lock = threading.Lock()
        self._conn: Any = None
        self._shut = False
        self._pid = os.getpid()  # the process whose connection `_conn` is
        follow_forks(self)
        try:
            self._driver_error: type[Exception] = psycopg().Error
            with self._lock:
                self._connection()  # fail at open, like a file store: wrong schema, no server
        except (PostgresUnavailable, StoreSchemaError) as exc:
            raise self._error(str(exc)) from exc
        except self._driver_error as exc:
            raise self._error(
                f"cannot open {self._described}: {first_line(exc, self.target)}"
            ) from exc

    @property
    def _described(self) -> str:
        return f"{self._label} {self.target.display}"

    def _connection(self, *, compare_clocks: bool = True) -> Any:
        """The open connection (call under the lock): a new one, schema-checked, if needed;
        the clocks compared again when the last comparison is old (unless told not to)."""
        if self._conn is not None and _went_away(self._conn):
            self._drop()
        if self._conn is None:
            conn = connect(self.target)
            try:
                require_current(conn, self.target, self._migrations)
                self._clock_watch.check(conn)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        elif compare_clocks:
            self._clock_watch.check_if_due(self._conn)
        return self._conn

    def _own_process(self) -> None:
        """A child forked by other means than os.fork() (whose hook did not run) is caught
        here, before it touches the lock or the connection."""
        if self._pid != os.getpid():
            self._in_forked_child()

    def _in_forked_child(self) -> None:
        """In a forked child: the parent's connection is the parent's (never closed or used
        here), and the lock may have been held by a parent thread; the next call connects."""
        abandon(self._conn)
        self._conn = None
        self._lock = threading.Lock()
        self._pid = os.getpid()

    @contextlib.contextmanager
    def _session(self, doing: str, *, compare_clocks: bool = True) -> Iterator[Dialect]:
        self._own_process()
        with self._lock:
            if self._shut:
                raise self._error(f"{self._described} is closed")
            try:
                yield Dialect(self._connection(compare_clocks=compare_clocks))
            except StoreSchemaError as exc:  # the database was migrated under a running store
                raise self._error(str(exc)) from exc
            except (self._driver_error, PostgresUnavailable, OSError) as exc:
                self._drop_if_broken()
                why = failure_reason(exc, self.target)
                raise self._error(f"{self._described} could not {doing}: {why}") from exc
            except BaseException:
                self._drop_if_broken()
                raise

    def _drop_if_broken(self) -> None:
        """Forget a connection the server or the network broke: the next call reconnects."""
        conn = self._conn
        if conn is not None and (conn.broken or conn.closed):
            self._drop()

    def _drop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    def close(self) -> None:
        self._own_process()
        with self._lock:
            self._shut = True
            self._drop()


def _went_away(conn: Any) -> bool:
    """An idle connection the server has spoken on (its goodbye when it was shut down or its
    postmaster died) or closed: dead. Checked before a call is sent, so the call goes out on a
    fresh connection instead of failing; one syscall, no round trip. A connection that died
    silently (a network cut) is found by the call itself, which then fails closed."""
    if conn.closed or conn.broken:
        return True
    try:
        poller = select.poll()  # not select(): no limit on the descriptor's number
        poller.register(conn.fileno(), select.POLLIN | select.POLLERR | select.POLLHUP)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True
