"""The console's live events: one numbered stream per console process, read from any id.

A page renders its state server-side, then asks for what came after the last id it rendered
(the SSE route streams it), so a reload or a dropped connection loses nothing. Memory is
bounded: only the last `keep` events are kept, and a reader whose id is older than that (or
from an earlier console process) is told so, to render the page again in full rather than
silently miss events.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_KEEP = 2000


@dataclass(frozen=True, slots=True)
class LiveEvent:
    """One published event: `id` increases by one per publish in this process."""

    id: int
    topic: str
    data: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class LiveBatch:
    """The events after an id, and whether that is all of them.

    `gap` is True when some events after the asked id are no longer kept (it is older than
    the oldest kept one) or the id was never issued by this process (a reader from before a
    restart): the reader must re-render in full from the current state, then read on from
    `last_id`.
    """

    events: tuple[LiveEvent, ...]
    gap: bool
    last_id: int


class EventHub:
    """Thread-safe publish/read of numbered events; `wait_after` blocks without polling."""

    def __init__(self, keep: int = DEFAULT_KEEP) -> None:
        if keep < 1:
            raise ValueError("keep must be at least 1")
        self._events: deque[LiveEvent] = deque(maxlen=keep)
        self._last_id = 0
        self._closed = False
        self._changed = threading.Condition()

    @property
    def last_id(self) -> int:
        with self._changed:
            return self._last_id

    def publish(self, topic: str, data: Mapping[str, Any]) -> int:
        """Add an event and wake every waiter; returns its id. The data is stored as given:
        publish only what any signed-in page may show (already redacted)."""
        with self._changed:
            self._last_id += 1
            self._events.append(LiveEvent(self._last_id, topic, data))
            self._changed.notify_all()
            return self._last_id

    def after(self, last_id: int) -> LiveBatch:
        """Every kept event with an id above `last_id`, oldest first."""
        with self._changed:
            return self._batch(last_id)

    def wait_after(self, last_id: int, timeout: float) -> LiveBatch:
        """Like `after`, but blocks up to `timeout` seconds while there is nothing new (and
        the hub is open). An empty batch means the time ran out or the hub closed."""
        with self._changed:
            self._changed.wait_for(
                lambda: self._closed or self._last_id != last_id, timeout=max(timeout, 0.0)
            )
            return self._batch(last_id)

    def close(self) -> None:
        """Wake every waiter now (console shutdown); later waits return at once."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def _batch(self, last_id: int) -> LiveBatch:
        oldest = self._events[0].id if self._events else self._last_id + 1
        if last_id < 0 or last_id > self._last_id:
            # Not an id this process issued: everything kept, and the reader must re-render.
            return LiveBatch(tuple(self._events), True, self._last_id)
        gap = last_id + 1 < oldest
        # Ids are consecutive, so the first event after `last_id` sits at a known index.
        start = max(last_id + 1 - oldest, 0)
        events = tuple(itertools.islice(self._events, start, None))
        return LiveBatch(events, gap, self._last_id)
