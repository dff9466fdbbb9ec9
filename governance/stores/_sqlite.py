"""How the SQLite stores open their files: one file per store, durable per its mode.

Durability of a file store is a named mode:
    fsync  WAL with `synchronous=FULL`: every commit is fsync'd before it returns, so what the
           firewall recorded ahead of a tool survives a power loss. The default.
    os     WAL with `synchronous=NORMAL`: a commit is handed to the OS (the WAL file) but not
           fsync'd. It survives a killed process (kill -9, a crash), NOT a power loss or a
           kernel panic: the last commits may be lost then.
The ephemeral `memory:` backend does not use SQLite at all (`Memory*` in governance.stores).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final, Literal, get_args

from governance.core._closing import Closing

Durability = Literal["fsync", "os"]
DURABILITY_MODES: Final[tuple[Durability, ...]] = get_args(Durability)

_SYNCHRONOUS: Final[dict[str, str]] = {"fsync": "FULL", "os": "NORMAL"}


def check_durability(durability: object) -> Durability:
    """The mode, or ValueError naming the valid ones."""
    for mode in DURABILITY_MODES:
        if durability == mode:
            return mode
    raise ValueError(
        f"unknown durability mode {durability!r}; use one of {', '.join(DURABILITY_MODES)}"
    )


def open_connection(
    path: Path | str,
    *,
    durability: Durability,
    busy_timeout: float,
    readonly: bool = False,
) -> sqlite3.Connection:
    """A connection in autocommit mode (the stores issue BEGIN/COMMIT themselves), shared by
    threads behind the store's own lock, with the journal and sync mode the durability asks."""
    if readonly:
        uri = Path(path).resolve().as_uri() + "?mode=ro"
        return sqlite3.connect(
            uri, uri=True, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
    conn = sqlite3.connect(
        path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
    )
    try:
        _enter_wal(conn, busy_timeout)
        conn.execute(f"PRAGMA synchronous = {_SYNCHRONOUS[check_durability(durability)]}")
    except BaseException:
        conn.close()
        raise
    return conn


def _enter_wal(conn: sqlite3.Connection, busy_timeout: float) -> None:
    """Switch the file to WAL, waiting out other openers for up to `busy_timeout` seconds.

    SQLite answers the switch with SQLITE_BUSY at once, without calling the busy handler, while
    another connection holds a RESERVED lock on a rollback-journal file (it would deadlock
    otherwise). Processes that open one new file together hit exactly that, so the switch is
    retried here with a short backoff until the same deadline any other statement gets.
    """
    deadline = time.monotonic() + busy_timeout
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchall()
            return
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def utc_text(moment: dt.datetime) -> str:
    """Fixed-width ISO-8601 UTC (`...T12:00:00.000000Z`): SQL string order is time order."""
    if moment.tzinfo is not dt.UTC:  # already UTC (every audit timestamp): no conversion
        moment = moment.astimezone(dt.UTC)
    return moment.isoformat(timespec="microseconds")[:-6] + "Z"


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection, begin: str = "BEGIN IMMEDIATE") -> Iterator[None]:
    """A transaction that is rolled back unless the body committed it (`COMMIT`): a body that
    raises, or returns without committing (a read, a refusal), leaves nothing behind. The
    rollback's own failure never hides the body's error."""
    conn.execute(begin)
    try:
        yield
    finally:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")


class SqliteStore(Closing):
    """One connection behind a lock, shared by the store's threads, closed once.

    `_session(doing)` hands out the connection under the lock and turns the failures listed in
    `_wrapped` into the store's own error (`_error`), naming the store, its file and what it
    was doing, so every caller sees one kind of failure and fails closed on it.
    """

    _label: str = "store"
    _error: type[Exception] = Exception
    _wrapped: tuple[type[Exception], ...] = (sqlite3.Error, OSError)
    _passed_on: tuple[type[Exception], ...] = ()  # store errors raised on purpose inside

    path: Path

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    @contextlib.contextmanager
    def _session(self, doing: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._conn is None:
                raise self._error(f"{self._label} {self.path} is closed")
            try:
                yield self._conn
            except self._passed_on:
                raise
            except self._wrapped as exc:
                raise self._error(f"{self._label} {self.path} could not {doing}: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
