"""The audit log: one hash chain per run in SQLite, ordered by an explicit gap-free `seq`.

`hash = H(prev_hash || canonical_json({run_id, seq, kind, ts, data, alg}))` with H = HMAC-SHA256
when a key is configured, SHA-256 otherwise. Every write (`append`, or `append_many` for several
events of one run) is one transaction, so a batch lands whole or not at all; any failure to
write raises `AuditWriteError`, which the firewall treats as "do not execute". The file is
durable per its mode (governance.stores._sqlite: `fsync` or `os`).

Threads and processes sharing the file never fork a chain: `(run_id, seq)` is the primary key.
A log remembers the last event it wrote to each run, so its next write to that run is ONE
statement (a multi-row INSERT, atomic on its own) with no read before it; if another
connection extended the run meanwhile, that INSERT collides on `seq` and nothing is stored,
and the write is redone the long way: `BEGIN IMMEDIATE`, read the run's last event, insert.
The memory backend (governance.stores._audit_memory) shares the write path here
(`ChainWriter`): the same chain.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import hmac
import itertools
import json
import operator
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from governance.core._canonical import canonical_json, keyed_digest
from governance.core._clock import Clock, SystemClock
from governance.core._errors import AuditWriteError, GovernanceError
from governance.screening._redaction import redact
from governance.stores._audit_chain import KEY_ENV, Alg, ChainVerdict, chain_hash, genesis
from governance.stores._audit_verify import verify_stream
from governance.stores._sqlite import (
    Durability,
    SqliteStore,
    check_durability,
    open_connection,
    transaction,
    utc_text,
)

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS audit_events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    ts TEXT NOT NULL,
    data TEXT NOT NULL,
    alg TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
)
"""


_COLUMNS: Final = "run_id, seq, kind, ts, data, alg, prev_hash, hash"
_INSERT: Final = f"INSERT INTO audit_events ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
_LAST: Final = "SELECT seq, alg, hash FROM audit_events WHERE run_id = ? ORDER BY seq DESC LIMIT 1"
# A one-statement write binds 8 values per row: within SQLite's oldest limit of 999 values.
_MAX_ROWS_PER_STATEMENT: Final = 100
_TAILS_KEPT: Final = 1024  # runs whose last event a log remembers (the least recent go first)


@functools.cache
def _insert_rows(count: int) -> str:
    """One INSERT statement for `count` rows: atomic without an explicit transaction."""
    values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * count)
    return f"INSERT INTO audit_events ({_COLUMNS}) VALUES {values}"


Row = tuple[str, int, str, str, str, str, str, str]  # the columns of _COLUMNS, in order


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One stored event, as read back (its `data` is already redacted)."""

    run_id: str
    seq: int
    kind: str
    ts: str
    data: dict[str, Any]
    alg: str
    prev_hash: str
    hash: str


def _format_ts(now: dt.datetime) -> str:
    if now.tzinfo is None:
        raise ValueError("the clock returned a naive datetime; audit timestamps must be UTC")
    return utc_text(now)


class ChainWriter:
    """The write path every audit backend shares: validate and redact a batch, chain it onto
    the run's last event, and turn any failure into AuditWriteError (the firewall's "do not
    execute"). A backend supplies `_write`: find the run's last event and store the rows its
    `_chain` returns, atomically, under its own lock."""

    _key: bytes | None
    _clock: Clock

    @property
    def alg(self) -> Alg:
        """What this log writes and expects: `hmac-sha256` with a key, `sha256` without."""
        return "hmac-sha256" if self._key else "sha256"

    def digest_arguments(self, arguments: Mapping[str, Any]) -> str:
        """A keyed digest of the raw arguments: provable later without storing them."""
        try:
            return keyed_digest(dict(arguments), self._key)
        except (TypeError, ValueError) as exc:
            raise AuditWriteError(f"arguments cannot be digested as JSON: {exc}") from exc

    def append(self, run_id: str, kind: str, data: Mapping[str, Any]) -> AuditEvent:
        """Redact `data` and add it as the next event of `run_id`'s chain, or raise."""
        return self.append_many(run_id, ((kind, data),))[0]

    def append_many(
        self, run_id: str, events: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> list[AuditEvent]:
        """Add `(kind, data)` events to `run_id`'s chain in order, in ONE transaction (one
        fsync in `fsync` mode): all of them are recorded, or none and AuditWriteError."""
        try:
            if not isinstance(run_id, str) or not run_id:
                raise ValueError(f"run_id must be a non-empty string, not {run_id!r}")
            if not events:
                raise ValueError("append_many needs at least one event")
            prepared = [_prepare(kind, data) for kind, data in events]
        except Exception as exc:
            raise AuditWriteError(f"audit event for run {run_id!r} is not valid: {exc}") from exc
        try:
            return self._write(run_id, prepared)
        except AuditWriteError:
            raise
        except Exception as exc:  # fail closed: whatever went wrong, nothing was recorded
            kinds = ", ".join(repr(kind) for kind, _ in events)  # only a failure names them
            raise AuditWriteError(
                f"could not write {kinds} for run {run_id!r} to {self._name()}: {exc}"
            ) from exc

    def _name(self) -> str:
        raise NotImplementedError

    def _write(
        self, run_id: str, prepared: Sequence[tuple[str, str, dict[str, Any], bool]]
    ) -> list[AuditEvent]:
        raise NotImplementedError

    def _chain(
        self,
        run_id: str,
        last: Sequence[Any] | None,
        prepared: Sequence[tuple[str, str, dict[str, Any], bool]],
    ) -> tuple[list[Row], list[AuditEvent]]:
        """The stored rows and the events of a batch chained onto `last` (the run's last
        `(seq, alg, hash)`, None for a new run). Pure but for the clock: raises before the
        backend has stored anything."""
        alg = self.alg
        if last is None:
            seq, prev_hash = 0, genesis(alg)
        else:
            if last[1] != alg:
                raise ValueError(
                    f"run {run_id!r} was started with alg {last[1]!r} but this log writes "
                    f"{alg!r}; check {KEY_ENV}"
                )
            seq, prev_hash = int(last[0]), str(last[2])
        rows: list[Row] = []
        out: list[AuditEvent] = []
        now, key = self._clock.now, self._key
        # What every record of the batch shares, encoded once: `_record_json` in two pieces.
        head, run_text = f'{{"alg":{_text(alg)},"data":', _text(run_id)
        for kind, stored, clean, plain in prepared:
            seq += 1
            ts = _format_ts(now())
            if plain:  # `stored` is the canonical JSON of `clean`: hash it as it is
                message = (
                    f'{head}{stored},"kind":{_text(kind)},"run_id":{run_text},'
                    f'"seq":{int(seq)},"ts":{_text(ts)}}}'
                ).encode()
                digest = _seal(prev_hash, message, alg, key)
            else:
                digest = chain_hash(
                    prev_hash, run_id=run_id, seq=seq, kind=kind, ts=ts, data=clean, alg=alg,
                    key=key,
                )  # fmt: skip
            rows.append((run_id, seq, kind, ts, stored, alg, prev_hash, digest))
            out.append(AuditEvent(run_id, seq, kind, ts, clean, alg, prev_hash, digest))
            prev_hash = digest
        return rows, out


class SqlAuditLog(ChainWriter):
    """The audit log's reads in SQL, shared by the SQLite file and the PostgreSQL server: a
    run's events in `seq` order, and verification streamed over one ordered query. A backend
    supplies `_query` and `_cursor` (the shared SQL uses `?` markers)."""

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        raise NotImplementedError

    def _cursor(
        self, sql: str, params: tuple[Any, ...] = ()
    ) -> contextlib.AbstractContextManager[Iterator[Any]]:
        raise NotImplementedError

    # What a backend's one-statement write raises when another writer took the seq first.
    _collision: tuple[type[Exception], ...] = ()
    _tails: dict[str, tuple[int, str, str]]  # run id -> (seq, alg, hash) this log last wrote

    def _exclusive(self, conn: Any, run_id: str) -> contextlib.AbstractContextManager[None]:
        """A transaction no other writer of `run_id` can interleave with; it commits on exit."""
        raise NotImplementedError

    def _one_statement(self, run_id: str, rows: Sequence[Row]) -> tuple[str, list[Any]]:
        """One statement storing `rows`, atomic on its own (see the module doc)."""
        return _insert_rows(len(rows)), [v for row in rows for v in row]

    def _extend(
        self, conn: Any, run_id: str, prepared: Sequence[tuple[str, str, dict[str, Any], bool]]
    ) -> list[AuditEvent]:
        """Store a batch on the run's chain (under the log's lock): one statement onto the
        remembered last event, or the long way when there is none or another writer won."""
        tail = self._tails.pop(run_id, None)  # back only once this write is stored
        if tail is not None and len(prepared) <= _MAX_ROWS_PER_STATEMENT:
            rows, out = self._chain(run_id, tail, prepared)
            try:
                conn.execute(*self._one_statement(run_id, rows))
            except self._collision:
                pass  # another connection wrote this seq: nothing of ours is stored
            else:
                self._remember(run_id, out[-1])
                return out
        with self._exclusive(conn, run_id):
            last = conn.execute(_LAST, (run_id,)).fetchone()
            rows, out = self._chain(run_id, last, prepared)
            conn.executemany(_INSERT, rows)
        self._remember(run_id, out[-1])
        return out

    def _remember(self, run_id: str, last: AuditEvent) -> None:
        """Note the last event written to `run_id` (under the lock, after it was stored)."""
        if len(self._tails) >= _TAILS_KEPT:
            del self._tails[next(iter(self._tails))]
        self._tails[run_id] = (last.seq, last.alg, last.hash)

    def _rows(self, run_id: str) -> list[Any]:
        return self._query(
            f"SELECT {_COLUMNS} FROM audit_events WHERE run_id = ? ORDER BY seq", (run_id,)
        )

    def run_ids(self) -> list[str]:
        rows = self._query("SELECT DISTINCT run_id FROM audit_events ORDER BY run_id")
        return [str(row[0]) for row in rows]

    def head(self, run_id: str) -> str | None:
        """The hash of the run's last event (unverified): what to anchor outside the database."""
        rows = self._query(
            "SELECT hash FROM audit_events WHERE run_id = ? ORDER BY seq DESC LIMIT 1", (run_id,)
        )
        return str(rows[0][0]) if rows else None

    def events(self, run_id: str) -> list[AuditEvent]:
        """The run's events ordered by seq. Raises if a row's data is not a JSON object."""
        return [read_event(row) for row in self._rows(run_id)]

    def verify(self, run_id: str) -> ChainVerdict:
        """Recompute the run's chain from genesis and name the first event that does not fit."""
        where = "WHERE run_id = ? ORDER BY seq"
        with self._cursor(f"SELECT {_COLUMNS} FROM audit_events {where}", (run_id,)) as rows:
            return verify_rows(run_id, rows, self._key)

    def verify_all(self) -> list[ChainVerdict]:
        """Every run's verdict, ordered by run id: one pass over the primary key, streamed."""
        verdicts = []
        with self._cursor(f"SELECT {_COLUMNS} FROM audit_events ORDER BY run_id, seq") as rows:
            for run_id, run_rows in itertools.groupby(rows, key=operator.itemgetter(0)):
                if isinstance(run_id, str):
                    verdicts.append(verify_rows(run_id, run_rows, self._key))
                else:  # a BLOB run id: no text id names these rows
                    verdicts.append(verify_rows(str(run_id), (), self._key))
        return verdicts


class AuditLog(SqlAuditLog, SqliteStore):
    """An append-only, per-run hash-chained event log in one SQLite file (WAL).

    Safe to share between threads (one connection behind a lock) and between processes
    (`BEGIN IMMEDIATE` plus a busy timeout). `readonly=True` opens an existing file for
    verification without ever writing to it. `durability` is `fsync` (default) or `os`.
    Reads fail as GovernanceError; writes as AuditWriteError (the firewall's "do not execute").
    """

    _label = "audit log"
    _error = GovernanceError
    _collision = (sqlite3.IntegrityError,)

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        key: bytes | None = None,
        clock: Clock | None = None,
        busy_timeout: float = 5.0,
        readonly: bool = False,
        durability: Durability = "fsync",
    ) -> None:
        self.path = Path(path)
        self.durability = check_durability(durability)
        self._key = key or None
        self._clock: Clock = clock or SystemClock()
        self._readonly = readonly
        # run id -> (seq, alg, hash) of the last event this log wrote to it (see the module doc).
        self._tails: dict[str, tuple[int, str, str]] = {}
        super().__init__()
        try:
            self._conn = self._connect(busy_timeout)
        except (sqlite3.Error, OSError) as exc:
            if readonly:
                raise GovernanceError(f"cannot open audit log {self.path}: {exc}") from exc
            raise AuditWriteError(f"cannot open audit log {self.path}: {exc}") from exc

    @classmethod
    def from_env(
        cls,
        path: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        readonly: bool = False,
    ) -> AuditLog:
        """Keyed with `PROCTOR_AUDIT_KEY` (UTF-8) when it is set and not empty."""
        return cls(path, key=cls.key_from_env(), clock=clock, readonly=readonly)

    @staticmethod
    def key_from_env() -> bytes | None:
        """`PROCTOR_AUDIT_KEY` as UTF-8 bytes, or None when it is unset or empty."""
        return os.environ.get(KEY_ENV, "").encode("utf-8") or None

    def _connect(self, busy_timeout: float) -> sqlite3.Connection:
        if self._readonly and not self.path.is_file():
            raise OSError(f"no such file: {self.path}")
        # fsync: an event is on disk before the call it guards may run (governance.stores._sqlite).
        conn = open_connection(
            self.path,
            durability=self.durability,
            busy_timeout=busy_timeout,
            readonly=self._readonly,
        )
        try:
            if self._readonly:
                conn.execute("SELECT 1 FROM audit_events LIMIT 1").fetchall()
            else:
                conn.execute(_SCHEMA)
        except BaseException:
            conn.close()
            raise
        return conn

    def _name(self) -> str:
        return f"audit log {self.path}"

    def _write(
        self, run_id: str, prepared: Sequence[tuple[str, str, dict[str, Any], bool]]
    ) -> list[AuditEvent]:
        with self._lock:
            if self._conn is None:
                raise AuditWriteError(f"audit log {self.path} is closed")
            if self._readonly:
                raise AuditWriteError(f"audit log {self.path} was opened read-only")
            return self._extend(self._conn, run_id, prepared)

    @contextlib.contextmanager
    def _exclusive(self, conn: Any, run_id: str) -> Iterator[None]:
        with transaction(conn):  # BEGIN IMMEDIATE: every other writer of the file waits
            yield
            conn.execute("COMMIT")

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        with self._session("read it") as conn:
            return conn.execute(sql, params).fetchall()

    @contextlib.contextmanager
    def _cursor(self, sql: str, params: tuple[Any, ...] = ()) -> Iterator[Iterator[Any]]:
        """Rows one at a time under the lock (a long log never sits in memory as a list)."""
        with self._session("read it") as conn:
            cursor = conn.execute(sql, params)
            try:
                yield cursor
            finally:
                cursor.close()


def read_event(row: Sequence[Any]) -> AuditEvent:
    """A stored row as an event, its data parsed anew (GovernanceError if not a JSON object)."""
    run, seq, kind, ts, data, alg, prev_hash, digest = row
    try:
        parsed = json.loads(data)
    except (TypeError, ValueError):
        parsed = None
    if not isinstance(parsed, dict):
        raise GovernanceError(
            f"audit event {run!r} seq {seq} has malformed data; run `proctor audit verify`"
        )
    return AuditEvent(run, seq, kind, ts, parsed, alg, prev_hash, digest)


def _prepare(kind: str, data: Mapping[str, Any]) -> tuple[str, str, dict[str, Any], bool]:
    """(kind, stored JSON text, the redacted data as read back, whether that data is plain).

    Plain data (exact JSON types, text keys: every firewall record) reads back as itself, so
    it is neither parsed back nor encoded a second time for its hash. ValueError/TypeError if
    it is not JSON at all.
    """
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"kind must be a non-empty string, not {kind!r}")
    if not isinstance(data, Mapping):
        raise TypeError(f"data must be a mapping, not {type(data).__name__}")
    redacted = redact(data)
    stored = canonical_json(redacted).decode("utf-8")
    if _plain(redacted):
        return kind, stored, redacted, True
    # Not plain (e.g. integer keys): store the canonical text of what reads back, so the stored
    # text is always exactly the text the chain hashes (the verifier hashes it as it is).
    clean: dict[str, Any] = json.loads(stored)
    return kind, canonical_json(clean).decode("utf-8"), clean, False


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any) -> bool:
    """Exact JSON types with text keys: its canonical JSON parses back to an equal value and
    encodes again to the same text (a non-text key would come back as text, reordered).

    One loop over a stack, scalars checked where they sit: this runs on every audit record,
    and a call per value (recursion through `all(map(...))`) cost more than the rest of it."""
    scalars = _SCALARS
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            for key, inner in item.items():
                if type(key) is not str:
                    return False
                inner_kind = type(inner)
                if inner_kind is dict or inner_kind is list:
                    stack.append(inner)
                elif inner_kind not in scalars:
                    return False
        elif kind is list:
            for inner in item:
                inner_kind = type(inner)
                if inner_kind is dict or inner_kind is list:
                    stack.append(inner)
                elif inner_kind not in scalars:
                    return False
        elif kind not in scalars:
            return False
    return True


def _record_json(run_id: str, seq: int, kind: str, ts: str, data: str, alg: str) -> bytes:
    """canonical_json of chain_hash's record, around `data` already in canonical JSON."""
    text = (
        f'{{"alg":{_text(alg)},"data":{data},"kind":{_text(kind)},"run_id":{_text(run_id)},'
        f'"seq":{int(seq)},"ts":{_text(ts)}}}'
    )
    return text.encode("utf-8")


def _text(value: str) -> str:
    """A JSON string literal, as `json.dumps(value, ensure_ascii=False)` writes it."""
    if type(value) is not str:  # a subclass may encode differently: let json decide
        return json.dumps(value, ensure_ascii=False)
    return _encode_string(value)


# What json.dumps(ensure_ascii=False) calls for a str, without building an encoder per call.
_encode_string: Final = json.encoder.encode_basestring


def _seal(prev_hash: str, message: bytes, alg: str, key: bytes | None) -> str:
    """chain_hash's digest of a record already encoded (`message`)."""
    payload = prev_hash.encode("utf-8") + message
    if alg == "hmac-sha256":
        if not key:
            raise ValueError("an hmac-sha256 chain needs its key")
        return f"{alg}:" + hmac.new(key, payload, hashlib.sha256).hexdigest()
    if alg == "sha256":
        return f"{alg}:" + hashlib.sha256(payload).hexdigest()
    raise ValueError(f"unknown audit alg {alg!r}")


def verify_rows(run_id: str, rows: Iterable[Sequence[Any]], key: bytes | None) -> ChainVerdict:
    """Pure chain check over stored rows `(run_id, seq, kind, ts, data, alg, prev_hash, hash)`,
    in seq order, consumed one at a time (see governance.stores._audit_verify)."""

    return verify_stream(run_id, rows, key)
