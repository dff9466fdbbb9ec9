"""The exporter's front door: the hot path appends to a bounded queue, a background thread (started
at the first event) turns what it finds into spans and metrics, and the SDK exports them.

Nothing here may change what a call does: `observe` and `model_turn` never block, never raise
and never read anything but the event; a full queue drops (and counts) the newest records; an
exporter failing costs one warning line on stderr. The OpenTelemetry SDK is imported by `start`
and built on the background thread, so a process that forks workers before its first event
(`proctor run -j N`) has started no thread, and each child builds its own.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from governance.core._errors import ExtraUnavailable
from governance.telemetry._config import TelemetryConfig
from governance.telemetry._records import ObservedEvent, Record, RunFacts, TurnRecord
from governance.telemetry._warning import warn_once

INSTALL_HINT = "pip install 'proctor[otel]'"
# How often the background thread looks at the queue: the hot path never signals it. The thread
# turns records into spans once no record came for this long, or the queue is a quarter full.
POLL_SECONDS = 0.05

# (approval id) counts: what `proctor.approvals.pending` reads at each collection.
PendingReader = Callable[[], int]
# (budget id, scope, used) rows: what `proctor.budget.usage` reads at each collection.
BudgetReader = Callable[[], Iterable[tuple[str, str, int]]]


class Telemetry:
    """OpenTelemetry export of runs, model turns, tool calls and decisions (see
    governance.telemetry). A firewall observer: `gateway.firewall.add_observer(t.observe)`, or
    `Gateway(telemetry=t)`."""

    def __init__(self, config: TelemetryConfig, *, service_role: str) -> None:
        """Use `start`: it checks the SDK is installed first."""
        self.config = config
        self.service_role = service_role
        self._queue: deque[Record] = deque()
        self._limit = config.queue_limit
        self._high_water = max(config.queue_limit // 4, 1)
        self._dropped = 0
        self._lock = threading.Lock()
        # Held while this thread builds the SDK or turns records into spans (work that may
        # import modules lazily): os.fork() waits for it, so no child starts with a half-
        # imported module.
        self._fork_guard = threading.Lock()
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._stopping = False
        self._closed = False
        self._shut = False  # shutdown() was called: stays closed, in a forked child too
        self._watched: list[tuple[PendingReader, BudgetReader]] = []
        self._exporting: Any = None  # governance.telemetry._sdk.Exporting, once started
        _after_fork_in_child(self)

    @classmethod
    def start(cls, config: TelemetryConfig, *, service_role: str) -> Telemetry:
        """Ready to export (ExtraUnavailable without the `otel` extra). Starts no thread."""
        try:
            # Imported here, on the caller's thread, never on the background one: a fork in the
            # middle of an import would leave the child a half-initialised module.
            import governance.telemetry._sdk  # noqa: F401
        except ImportError as exc:
            raise ExtraUnavailable(
                f"OpenTelemetry export needs the `otel` extra ({exc.name} is missing): "
                f"{INSTALL_HINT}"
            ) from None
        return cls(config, service_role=service_role)

    # -- the hot path ---------------------------------------------------------------------

    def observe(self, event: ObservedEvent) -> None:
        """A firewall observer: every call and run event, as recorded."""
        self._put(event)

    def model_turn(self, turn: TurnRecord) -> None:
        """One `provider.complete()` of an agent loop."""
        self._put(turn)

    def run_attributes(
        self, run_id: str, attributes: dict[str, str], *, trace_key: str | None = None
    ) -> None:
        """Facts about a run its events do not carry (an eval run's `proctor.scenario.id`,
        `proctor.eval.run_id`), put on its run span; call it before the run starts.
        `trace_key`: what the run's trace id derives from when `run_id` is reused from run to
        run (an eval scenario's); unique per run, or two runs share one trace."""
        self._put(RunFacts(run_id, tuple(sorted(attributes.items())), trace_key))

    def _put(self, record: Record) -> None:
        if self._closed:
            return
        if len(self._queue) >= self._limit:
            self._dropped += 1
            return
        self._queue.append(record)
        if self._thread is None:
            self._start_thread()

    @property
    def dropped(self) -> int:
        """Records dropped because the queue was full."""
        return self._dropped

    # -- what the gateway lends it ------------------------------------------------------------

    def watch(self, *, pending: PendingReader, budgets: BudgetReader) -> Callable[[], None]:
        """Read a gateway's stores at each metric collection: `pending()` counts its pending
        approval requests, `budgets()` lists (budget id, scope, used) rows. Returns the call
        that stops it (a closed gateway's stores are never read, nor kept alive)."""
        entry = (pending, budgets)
        with self._lock:
            self._watched.append(entry)

        def unwatch() -> None:
            with self._lock:
                if entry in self._watched:
                    self._watched.remove(entry)

        return unwatch

    def pending_readers(self) -> list[PendingReader]:
        with self._lock:
            return [pending for pending, _ in self._watched]

    def budget_readers(self) -> list[BudgetReader]:
        with self._lock:
            return [budgets for _, budgets in self._watched]

    # -- the background side ------------------------------------------------------------------

    def _start_thread(self) -> None:
        with self._lock:
            if self._thread is not None or self._closed:
                return
            thread = threading.Thread(target=self._work, name="proctor-telemetry", daemon=True)
            self._thread = thread
            thread.start()

    def _work(self) -> None:
        from governance.telemetry._sdk import start_exporting  # loaded by start(): no import

        try:
            with self._fork_guard:
                exporting = start_exporting(self)
        except Exception as exc:  # a broken SDK install: say so once, keep the calls going
            warn_once(self, f"cannot start OpenTelemetry export ({type(exc).__name__}: {exc})")
            self._closed = True
            self._queue.clear()
            return
        self._exporting = exporting
        waiting = -1  # queue length at the last look
        while True:
            self._wake.wait(POLL_SECONDS)
            self._wake.clear()
            stopping = self._stopping
            size = len(self._queue)
            if not stopping and size != waiting and size < self._high_water:
                # Calls are still coming: turning records into spans now would compete with
                # them for the interpreter. Wait for a pause (a model turn, an idle server) or
                # for the queue to fill up.
                waiting = size
                continue
            waiting = -1
            for _ in range(len(self._queue) if not stopping else sys.maxsize):
                if not self._queue:
                    break
                with self._fork_guard:
                    record = self._queue.popleft()
                    try:
                        exporting.handle(record)
                    except Exception:  # one odd record never stops the export of the others
                        pass
            with self._fork_guard:
                try:
                    exporting.settle()
                except Exception:
                    pass
            if stopping:
                exporting.finish()
                return

    def shutdown(self, timeout_seconds: float = 5.0) -> None:
        """Export what is queued and stop; never blocks longer than `timeout_seconds` (what is
        not exported by then is lost). Idempotent."""
        with self._lock:
            if self._shut:
                return
            self._shut = True
            self._closed = True
            self._stopping = True
            thread = self._thread
        if thread is None:
            return
        self._wake.set()
        thread.join(timeout_seconds)
        if thread.is_alive():  # a backend that does not answer: what is left is dropped
            warn_once(
                self,
                f"the export did not finish within {timeout_seconds:g}s of shutdown; is "
                f"{self.config.traces_endpoint} answering?",
            )

    def _forget_after_fork(self) -> None:
        """In a forked child: the parent's thread and providers do not exist here, and what it
        had queued is the parent's to export."""
        self._lock = threading.Lock()
        self._fork_guard = threading.Lock()
        self._wake = threading.Event()
        self._queue = deque()
        self._thread = None
        self._exporting = None
        self._dropped = 0
        self._stopping = self._shut
        self._closed = self._shut


def _after_fork_in_child(telemetry: Telemetry) -> None:
    """Fork hooks: wait for the background thread's guarded work before a fork, start afresh
    in the child. Weak: a Telemetry that is gone costs a no-op."""
    ref = weakref.ref(telemetry)

    def before() -> None:
        alive = ref()
        if alive is not None:
            alive._fork_guard.acquire()

    def in_parent() -> None:
        alive = ref()
        if alive is not None:
            alive._fork_guard.release()

    def in_child() -> None:
        alive = ref()
        if alive is not None:
            alive._forget_after_fork()

    if hasattr(os, "register_at_fork"):
        os.register_at_fork(before=before, after_in_parent=in_parent, after_in_child=in_child)
