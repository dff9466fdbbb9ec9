"""The audit log on a shared PostgreSQL server: the SQLite log's per-run hash chains.

The write path (validation, redaction, canonical JSON, HMAC-SHA256/SHA-256, timestamps from the
injected clock) and the reads and streamed verification are the SQLite log's (`SqlAuditLog`),
so identical events hash identically on either backend and one verifier checks both.

`seq` stays per run and gap-free under appenders on any number of hosts: every write takes a
per-run advisory transaction lock (`pg_advisory_xact_lock` on a hash of the run id) before it
reads the run's last event, and `(run_id, seq)` is the primary key, so a chain never forks. A
log that remembers the run's last event writes ONE statement (the lock, then a multi-row
INSERT); a collision on `seq` (another gateway extended the run) stores nothing and the write
is redone the long way in a transaction: lock, read the last event, insert. A batch lands whole
or not at all. The table refuses UPDATE, DELETE and TRUNCATE (triggers, see
governance.stores._postgres_schema). Any failure to write, a killed server included, is an
AuditWriteError: the firewall does not execute the call that event guards.
"""

from __future__ import annotations

import contextlib
import functools
import queue
import threading
from collections.abc import Generator, Iterator, Sequence
from typing import Any, Final

from governance.core._clock import Clock, SystemClock
from governance.core._errors import AuditWriteError, GovernanceError
from governance.stores._audit import _COLUMNS, AuditEvent, Row, SqlAuditLog
from governance.stores._postgres import PostgresTarget, psycopg
from governance.stores._postgres_clock import SkewSetting
from governance.stores._postgres_store import PostgresStore, placeholders

# The per-run lock key: two runs share a key only by a 64-bit hash collision (then they merely
# wait for each other). The seed keeps these keys apart from other advisory locks' constants.
_RUN_LOCK: Final = "pg_advisory_xact_lock(hashtextextended(?, 1347571523))"
_FETCH_ROWS: Final = 5000  # rows a verification fetches from the server at a time


@functools.lru_cache(maxsize=128)
def _locked_insert(count: int) -> str:
    """Lock the run, then insert `count` rows: one statement, one round trip, atomic."""
    values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * count)
    return (
        f"WITH run_lock AS (SELECT {_RUN_LOCK}) INSERT INTO audit_events ({_COLUMNS}) "
        f"SELECT v.* FROM (VALUES {values}) AS v ({_COLUMNS}) CROSS JOIN run_lock"
    )


class PostgresAuditLog(PostgresStore, SqlAuditLog):
    """Per-run hash chains in one PostgreSQL database, shared by every gateway that opens it.

    Writes fail as AuditWriteError (the firewall's "do not execute"), reads as GovernanceError.
    """

    _label = "audit log"
    _error = GovernanceError

    def __init__(
        self,
        target: PostgresTarget,
        *,
        key: bytes | None = None,
        clock: Clock | None = None,
        max_clock_skew: SkewSetting = "auto",
    ) -> None:
        self._key = key or None
        self._clock = clock or SystemClock()
        self._tails = {}
        try:
            PostgresStore.__init__(self, target, max_clock_skew=max_clock_skew)
        except GovernanceError as exc:
            raise AuditWriteError(str(exc)) from exc
        self._collision = (psycopg().errors.UniqueViolation,)

    def _name(self) -> str:
        return f"audit log {self.target.display}"

    def _write(
        self, run_id: str, prepared: Sequence[tuple[str, str, dict[str, Any], bool]]
    ) -> list[AuditEvent]:
        with self._session("write to it") as conn:  # ChainWriter: any failure -> AuditWriteError
            return self._extend(conn, run_id, prepared)

    def _one_statement(self, run_id: str, rows: Sequence[Row]) -> tuple[str, list[Any]]:
        return _locked_insert(len(rows)), [run_id, *(v for row in rows for v in row)]

    @contextlib.contextmanager
    def _exclusive(self, conn: Any, run_id: str) -> Iterator[None]:
        with conn.transaction():
            conn.execute(f"SELECT {_RUN_LOCK}", (run_id,))
            yield

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        with self._session("read it") as conn:
            return list(conn.execute(sql, params).fetchall())

    @contextlib.contextmanager
    def _cursor(self, sql: str, params: tuple[Any, ...] = ()) -> Iterator[Iterator[Any]]:
        """Rows streamed from a server-side cursor: a long log never sits in memory."""
        with self._session("read it") as conn, conn.transaction():
            with conn.raw.cursor(name="proctor_audit_read") as cursor:
                cursor.execute(placeholders(sql), params)
                rows = _prefetched(cursor)
                try:
                    yield rows
                finally:
                    rows.close()  # stops the fetching thread before the cursor closes


def _prefetched(cursor: Any) -> Generator[Any, None, None]:
    """The cursor's rows, the next batch fetched by a helper thread while this one verifies
    the last: waiting on the server and building rows overlaps the hashing, which makes a
    verification as fast as one over a SQLite file. A fetch error is raised here, in order."""
    batches: queue.Queue[list[Any] | BaseException] = queue.Queue(maxsize=2)
    stop = threading.Event()

    def put(item: list[Any] | BaseException) -> None:
        while not stop.is_set():
            with contextlib.suppress(queue.Full):
                batches.put(item, timeout=0.1)
                return

    def fetch() -> None:
        try:
            while not stop.is_set():
                rows = cursor.fetchmany(_FETCH_ROWS)
                put(rows)
                if not rows:
                    return
        except BaseException as exc:  # handed to the reader, who raises it
            put(exc)

    thread = threading.Thread(target=fetch, name="proctor-audit-fetch", daemon=True)
    thread.start()
    try:
        while True:
            item = batches.get()
            if isinstance(item, BaseException):
                raise item
            if not item:
                return
            yield from item
    finally:
        stop.set()
        thread.join()
