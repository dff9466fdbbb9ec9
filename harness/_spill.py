"""Records a suite keeps per scenario, kept on disk: memory stays flat however big the suite.

A `Spill` appends each record, pickled, to an unnamed temporary file (gone when closed or when
the process ends; no other process can open it) and keeps only its end offset in memory (8
bytes a record), plus, when records are keyed, a key -> position map. Reads go back to the
file; a suite pass reads them in order, so that is one sequential read.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import weakref
from array import array
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")
_BATCH = 256


class Spill(Generic[T]):
    """Append-only records on disk, read back by position or key.

    Reads use `os.pread`, so a forked child (a `-j` worker) shares the file safely; every live
    spill is flushed just before a fork, so no child inherits records still in a write buffer
    (each would write them again through the shared file offset)."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="proctor-spill-")  # noqa: SIM115 (lives with self)
        # Closed (and so gone) when the spill is: whoever drops a suite need not close it.
        weakref.finalize(self, self._file.close)
        self._ends = array("Q")
        self._keys: dict[str, int] = {}
        self._size = 0
        self._unflushed = False
        _LIVE.add(self)

    def append(self, record: T, key: str | None = None) -> int:
        """Store `record` (under `key`, if given); returns its position."""
        position = len(self._ends)
        if key is not None:  # a key stored again names its latest record
            self._keys[key] = position
        data = pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)
        self._file.write(data)
        self._size += len(data)
        self._ends.append(self._size)
        self._unflushed = True
        return position

    def __len__(self) -> int:
        return len(self._ends)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def position(self, key: str) -> int | None:
        return self._keys.get(key)

    def keys(self) -> Iterator[str]:
        """Keys in the order their records were appended."""
        return iter(self._keys)

    def get(self, key: str) -> T | None:
        position = self._keys.get(key)
        return None if position is None else self.at(position)

    def at(self, position: int) -> T:
        start = self._ends[position - 1] if position else 0
        return self._read(start, self._ends[position] - start)

    def __iter__(self) -> Iterator[T]:
        self._flush()
        start = 0
        for first in range(0, len(self._ends), _BATCH):  # one read per batch of records
            stop = min(first + _BATCH, len(self._ends))
            end = self._ends[stop - 1]
            view = memoryview(os.pread(self._file.fileno(), end - start, start))
            offset = start
            for n in range(first, stop):
                yield pickle.loads(view[offset - start : self._ends[n] - start])
                offset = self._ends[n]
            start = end

    def _read(self, start: int, length: int) -> T:
        self._flush()
        record: T = pickle.loads(os.pread(self._file.fileno(), length, start))
        return record

    def _flush(self) -> None:
        if self._unflushed:
            self._file.flush()
            self._unflushed = False

    def close(self) -> None:
        self._file.close()


_LIVE: weakref.WeakSet[Spill[Any]] = weakref.WeakSet()


def _flush_before_fork() -> None:
    for spill in list(_LIVE):
        if not spill._file.closed:
            spill._flush()


os.register_at_fork(before=_flush_before_fork)
