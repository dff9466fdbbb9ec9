"""How the embedded stores open SQLite: one file per store (durable) or `:memory:` (ephemeral).

Durability of a file store is a named mode:
    fsync  WAL with `synchronous=FULL`: every commit is fsync'd before it returns, so what the
           firewall recorded ahead of a tool survives a power loss. The default.
    os     WAL with `synchronous=NORMAL`: a commit is handed to the OS (the WAL file) but not
           fsync'd. It survives a killed process (kill -9, a crash), NOT a power loss or a
           kernel panic: the last commits may be lost then.
An ephemeral store is `:memory:`: the same SQL, nothing on disk, no fsync, emptied on close
(`memory_database`: a copy of a per-process template, reused once emptied).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final, Literal, get_args

from governance.core._closing import Closing

Durability = Literal["fsync", "os"]
DURABILITY_MODES: Final[tuple[Durability, ...]] = get_args(Durability)
MEMORY: Final = ":memory:"

_SYNCHRONOUS: Final[dict[str, str]] = {"fsync": "FULL", "os": "NORMAL"}


def check_durability(durability: object) -> Durability:
    """The mode, or ValueError naming the valid ones."""
    for mode in DURABILITY_MODES:
        if durability == mode:
            return mode
    raise ValueError(
        f"unknown durability mode {durability!r}; use one of {', '.join(DURABILITY_MODES)}"
    )


def is_memory(path: Path | str) -> bool:
    return str(path) == MEMORY


def open_connection(
    path: Path | str,
    *,
    durability: Durability,
    busy_timeout: float,
    readonly: bool = False,
) -> sqlite3.Connection:
    """A connection in autocommit mode (the stores issue BEGIN/COMMIT themselves), shared by
    threads behind the store's own lock, with the journal and sync mode the durability asks."""
    if is_memory(path):
        return sqlite3.connect(MEMORY, isolation_level=None, check_same_thread=False)
    if readonly:
        uri = Path(path).resolve().as_uri() + "?mode=ro"
        return sqlite3.connect(
            uri, uri=True, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
    conn = sqlite3.connect(
        path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute("PRAGMA journal_mode = WAL").fetchall()
        conn.execute(f"PRAGMA synchronous = {_SYNCHRONOUS[check_durability(durability)]}")
    except BaseException:
        conn.close()
        raise
    return conn


_POOL_SIZE: Final = 4  # idle databases kept per schema: a gateway opens one of each


class _Template:
    """A pristine database of one schema, and emptied copies of it waiting to be reused."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        names = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        self.tables = tuple(str(row[0]) for row in names)
        self.idle: list[_MemoryConnection] = []

    def take_back(self, conn: _MemoryConnection) -> bool:
        """Empty `conn` and keep it for the next store of this schema; False when it cannot be
        shown to hold only the template's schema (then it is closed instead)."""
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if _schema_version(conn) != conn._version or conn.execute(
                "SELECT count(*) FROM temp.sqlite_master"
            ).fetchone() != (0,):
                return False
            if not self._emptied(conn):
                # A table that refuses deletes (the budget ledger's evidence triggers): the
                # template's pages go over it instead, as if it had been closed and copied anew.
                with _TEMPLATES_LOCK:
                    self.conn.backup(conn)
                conn._version = _schema_version(conn)
        except sqlite3.Error:
            return False
        with _TEMPLATES_LOCK:
            if len(self.idle) >= _POOL_SIZE:
                return False
            self.idle.append(conn)
        return True


    def _emptied(self, conn: sqlite3.Connection) -> bool:
        """Delete every row (statements stay compiled), or change nothing and say so."""
        try:
            conn.execute("BEGIN IMMEDIATE")
            for table in self.tables:  # sqlite_sequence too: AUTOINCREMENT starts again at 1
                conn.execute(f'DELETE FROM "{table}"')
            conn.execute("COMMIT")
        except sqlite3.Error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            return False
        return True


class _MemoryConnection(sqlite3.Connection):
    """A private `:memory:` database of one schema. `close()` empties it and hands it back to
    its schema's pool, so the next store of that schema finds its statements already compiled
    (the sqlite3 module's per-connection cache); nobody else holds it in between."""

    _home: _Template | None = None
    _version = -1  # its schema cookie when handed out (a backup sets the cookie its own way)

    def close(self) -> None:
        home, self._home = self._home, None
        if home is None or not home.take_back(self):
            super().close()


def _schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA schema_version").fetchone()[0])


# Per process (a forked child builds its own): the schema name -> its template and pool.
_TEMPLATES: dict[tuple[int, str], _Template] = {}
_TEMPLATES_LOCK = threading.Lock()


def memory_database(
    schema: str, create: Callable[[sqlite3.Connection], None]
) -> sqlite3.Connection:
    """A private `:memory:` database holding exactly what `create` makes in an empty one.

    `create` runs once per process and `schema` name, on a template database. A call then
    reuses a database an earlier store of the schema closed (emptied: every table, and the
    AUTOINCREMENT counters) or copies the template's pages (SQLite's backup API, ~15 µs),
    instead of running the DDL again (~50-300 µs a store) and compiling every statement anew.
    It shares no rows with any other store. Connection settings (PRAGMAs other than the
    schema's own) are not copied: set them after.
    """
    key = (os.getpid(), schema)
    with _TEMPLATES_LOCK:
        template = _TEMPLATES.get(key)
        if template is not None and template.idle:
            conn = template.idle.pop()
            conn._home = template
            return conn
    if template is None:
        pristine = sqlite3.connect(MEMORY, isolation_level=None, check_same_thread=False)
        try:
            create(pristine)
            made = _Template(pristine)
        except BaseException:
            pristine.close()
            raise
        with _TEMPLATES_LOCK:
            template = _TEMPLATES.setdefault(key, made)
        if template is not made:
            pristine.close()  # another thread built it first
    conn = sqlite3.connect(
        MEMORY, isolation_level=None, check_same_thread=False, factory=_MemoryConnection
    )
    try:
        with _TEMPLATES_LOCK:
            template.conn.backup(conn)
        conn._version = _schema_version(conn)
    except BaseException:
        conn.close()
        raise
    conn._home = template
    return conn


def utc_text(moment: dt.datetime) -> str:
    """Fixed-width ISO-8601 UTC (`...T12:00:00.000000Z`): SQL string order is time order."""
    return moment.astimezone(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


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
