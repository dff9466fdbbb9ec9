"""Time is injected: the core never reads the wall clock itself."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Protocol


class Clock(Protocol):
    def now(self) -> dt.datetime:
        """An aware UTC datetime."""
        ...


class SystemClock:
    """The real clock, for the edges (audit timestamps, approval expiry)."""

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)  # noqa: TID251 - the one sanctioned wall-clock read


class ManualClock:
    """A clock tests and replay runs move by hand."""

    def __init__(self, start: dt.datetime | None = None) -> None:
        self._now = start or dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
        self._lock = threading.Lock()

    def now(self) -> dt.datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += dt.timedelta(seconds=seconds)
