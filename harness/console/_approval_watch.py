"""Notices approval changes made elsewhere (the CLI, another console) and tells the pages.

The console's own decisions publish at once; a decision made by another process reaches the
store only, so a thread compares the pending requests every `interval` seconds and publishes
`approvals` when they changed. It stops at close and never decides anything.
"""

from __future__ import annotations

import threading

from governance.stores import ApprovalBackend
from harness.console._live import EventHub

POLL_SECONDS = 0.5


class ApprovalWatch:
    def __init__(
        self, approvals: ApprovalBackend, hub: EventHub, interval: float = POLL_SECONDS
    ) -> None:
        self._approvals = approvals
        self._hub = hub
        self._interval = interval
        self._stop = threading.Event()
        self._seen: frozenset[tuple[str, str]] = frozenset()
        self._seen = self._fingerprint()
        self._thread = threading.Thread(
            target=self._run, name="console-approval-watch", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _fingerprint(self) -> frozenset[tuple[str, str]]:
        try:
            return frozenset((r.id, r.state) for r in self._approvals.list(status="pending"))
        except Exception:  # a store that cannot answer now: the next poll tries again
            return self._seen

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            now = self._fingerprint()
            if now != self._seen:
                self._seen = now
                self._hub.publish("approvals", {"pending": sorted(i for i, _ in now)})
