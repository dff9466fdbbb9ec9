"""The console's live event journal: what changed, in order, for pages to follow over SSE.

Ids increase by one per console process. The journal keeps the last `capacity` events; a page
asking for events after an id older than that is told so (`reset`), and re-renders in full
instead of silently missing some.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

DEFAULT_CAPACITY = 10_000


@dataclass(frozen=True, slots=True)
class LiveEvent:
    id: int
    topic: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Since:
    events: list[LiveEvent]
    reset: bool  # events after the asked id were dropped: re-render from scratch


class EventHub:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError("capacity must be positive")
        self._events: deque[LiveEvent] = deque(maxlen=capacity)
        self._last = 0
        self._changed = threading.Condition()

    @property
    def last_id(self) -> int:
        with self._changed:
            return self._last

    def publish(self, topic: str, data: dict[str, Any] | None = None) -> int:
        with self._changed:
            self._last += 1
            self._events.append(LiveEvent(self._last, topic, dict(data or {})))
            self._changed.notify_all()
            return self._last

    def after(self, last_id: int) -> Since:
        with self._changed:
            return self._since(last_id)

    def wait_after(self, last_id: int, timeout: float) -> Since:
        with self._changed:
            self._changed.wait_for(lambda: self._last > last_id, timeout=timeout)
            return self._since(last_id)

    def _since(self, last_id: int) -> Since:
        if last_id > self._last:  # an id from before a restart: this journal never had it
            return Since([], reset=True)
        oldest = self._events[0].id if self._events else self._last + 1
        reset = last_id < oldest - 1
        return Since([e for e in self._events if e.id > last_id], reset=reset)
