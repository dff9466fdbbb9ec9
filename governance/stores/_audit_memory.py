"""The audit log in process memory, for scenario runs: the same chains as the SQLite log.

The write path is the SQLite log's (`ChainWriter`: validation, redaction, canonical JSON, the
hash), so identical events get identical hashes whichever backend holds them, and the same
verifier checks both. What SQLite gave for free is kept with one lock: a batch is chained in
full before any row is stored (all or none), and the run's last event is read and extended
under that lock (no read-then-write race between threads, so `seq` is gap-free and never forks).
Rows are stored as the SQLite log stores them (data as canonical text): a reader gets fresh
objects, never the store's own.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from governance.core._clock import Clock, SystemClock
from governance.core._closing import Closing
from governance.core._errors import AuditWriteError, GovernanceError
from governance.stores._audit import AuditEvent, ChainWriter, Row, read_event, verify_rows
from governance.stores._audit_chain import ChainVerdict


class MemoryAuditLog(ChainWriter, Closing):
    """Per-run hash chains in a dict, behind a lock; nothing on disk, gone on `close()`.

    Writes fail as AuditWriteError, reads (after `close()`) as GovernanceError, like AuditLog.
    """

    def __init__(self, *, key: bytes | None = None, clock: Clock | None = None) -> None:
        self._key = key or None
        self._clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._runs: dict[str, list[Row]] | None = {}

    def _name(self) -> str:
        return "the memory audit log"

    def _write(
        self, run_id: str, prepared: Sequence[tuple[str, str, dict[str, Any], bool]]
    ) -> list[AuditEvent]:
        with self._lock:
            runs = self._runs
            if runs is None:
                raise AuditWriteError("the memory audit log is closed")
            stored = runs.get(run_id)
            last = stored[-1] if stored else None
            # Every row is made (the clock read, the hash taken) before one is stored.
            tail = None if last is None else (last[1], last[5], last[7])  # seq, alg, hash
            rows, out = self._chain(run_id, tail, prepared)
            if stored is None:
                runs[run_id] = rows
            else:
                stored.extend(rows)
            return out

    def _open_runs(self) -> dict[str, list[Row]]:
        """The chains; call under the lock."""
        if self._runs is None:
            raise GovernanceError("the memory audit log is closed")
        return self._runs

    def _rows(self, run_id: str) -> list[Row]:
        """A copy of the run's rows (tuples: nobody can change the stored ones)."""
        with self._lock:
            return list(self._open_runs().get(run_id, ()))

    def run_ids(self) -> list[str]:
        with self._lock:
            return sorted(self._open_runs())  # code point order: SQLite's order of UTF-8 text

    def head(self, run_id: str) -> str | None:
        """The hash of the run's last event."""
        with self._lock:
            rows = self._open_runs().get(run_id)
            return rows[-1][7] if rows else None

    def events(self, run_id: str) -> list[AuditEvent]:
        return [read_event(row) for row in self._rows(run_id)]

    def verify(self, run_id: str) -> ChainVerdict:
        return verify_rows(run_id, self._rows(run_id), self._key)

    def verify_all(self) -> list[ChainVerdict]:
        return [self.verify(run_id) for run_id in self.run_ids()]

    def close(self) -> None:
        with self._lock:
            self._runs = None
