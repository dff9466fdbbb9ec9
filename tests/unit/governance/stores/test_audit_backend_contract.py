"""What every audit backend must keep, checked on each: a batch lands whole or not at all even
when it fails half-way through chaining, concurrent writers never fork or gap a run, and every
failure is the package's own error."""

from __future__ import annotations

import datetime as dt
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from governance.core._clock import ManualClock
from governance.core._errors import AuditWriteError, GovernanceError
from governance.stores._audit import AuditLog
from tests.store_backends import Backend

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


class _ClockThatFailsOnRead:
    """A clock that works `good` times, then raises: a failure in the middle of a batch."""

    def __init__(self, good: int) -> None:
        self.left = good

    def now(self) -> dt.datetime:
        if self.left <= 0:
            raise RuntimeError("clock exploded")
        self.left -= 1
        return T0


def test_a_batch_that_fails_half_way_through_records_none_of_it(backend: Backend) -> None:
    clock = _ClockThatFailsOnRead(good=2)  # the first append, then one event of the batch
    with backend.open(AuditLog, clock=clock) as log:
        log.append("r", "first", {})
        with pytest.raises(AuditWriteError, match="clock exploded"):
            log.append_many("r", [("a", {"n": 1}), ("b", {"n": 2})])
        assert [e.kind for e in log.events("r")] == ["first"]
        clock.left = 1
        assert log.append("r", "next", {}).seq == 2
        assert log.verify("r").ok


def test_a_new_run_whose_first_batch_fails_does_not_exist(backend: Backend) -> None:
    with backend.open(AuditLog, clock=_ClockThatFailsOnRead(good=1)) as log:
        with pytest.raises(AuditWriteError):
            log.append_many("r", [("a", {}), ("b", {})])
        assert (log.run_ids(), log.events("r"), log.head("r")) == ([], [], None)


@pytest.mark.parametrize(
    ("run_id", "kind", "data"),
    [("r", "k", {"x": object()}), ("r", "k", {"x": float("nan")}), ("", "k", {}), ("r", "", {})],
    ids=["object", "nan", "empty-run", "empty-kind"],
)
def test_an_event_that_cannot_be_recorded_raises_audit_write_error_and_adds_nothing(
    backend: Backend, run_id: str, kind: str, data: Any
) -> None:
    with backend.open(AuditLog) as log:
        log.append("r", "first", {})
        with pytest.raises(AuditWriteError):
            log.append(run_id, kind, data)
        assert [e.kind for e in log.events("r")] == ["first"] and log.run_ids() == ["r"]


def test_a_closed_log_refuses_writes_as_audit_write_errors_and_reads_as_governance_errors(
    backend: Backend,
) -> None:
    log = backend.open(AuditLog)
    log.append("r", "first", {})
    log.close()
    log.close()  # idempotent
    with pytest.raises(AuditWriteError, match="closed"):
        log.append("r", "next", {})
    for read in (log.run_ids, lambda: log.events("r"), lambda: log.head("r")):
        with pytest.raises(GovernanceError, match="closed"):
            read()


def test_the_same_events_get_the_same_hashes_on_every_backend(backend: Backend) -> None:
    """Pinned to the hash the SQLite file wrote at a53f208: a backend that encodes or chains
    differently (a reordered key, another ts format, another genesis) cannot match it."""
    with backend.open(AuditLog, key=b"k" * 32, clock=ManualClock(T0)) as log:
        log.append_many("run-é", [("a", {"z": [1, 2.5, None], "a": "ü"}), ("b", {9: "nine"})])
        assert log.head("run-é") == (
            "hmac-sha256:5f50838a8518d186388e317e74217b37099b9e913df1d101e66843ae1a15b142"
        )


@pytest.fixture
def fine_grained_switching() -> Iterator[None]:
    """Threads switch every microsecond, so a read-then-write without a lock is interleaved."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


@pytest.mark.usefixtures("fine_grained_switching")
def test_threads_sharing_one_log_write_gap_free_chains_with_every_event_once(
    backend: Backend,
) -> None:
    threads_n, per_thread, runs = 6, 150, ["run-a", "run-b"]
    log = backend.open(AuditLog, key=b"k")
    start = threading.Barrier(threads_n, timeout=10)
    errors: list[BaseException] = []

    def writer(index: int) -> None:
        try:
            start.wait()
            for n in range(per_thread):
                batch = [("step", {"writer": index, "n": n}), ("after", {"writer": index})]
                log.append_many(runs[(index + n) % len(runs)], batch)
        except BaseException as exc:  # surfaced below; a thread's exception is otherwise lost
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    verdicts = log.verify_all()
    assert [v.run_id for v in verdicts] == runs and all(v.ok for v in verdicts), verdicts
    seen = []
    for run_id in runs:
        events = log.events(run_id)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        # A batch is contiguous: each `step` is followed by its own writer's `after`.
        pairs = list(zip(events[::2], events[1::2], strict=True))
        assert all(s.data["writer"] == a.data["writer"] for s, a in pairs)
        seen.extend((s.data["writer"], s.data["n"]) for s, _ in pairs)
    assert sorted(seen) == [(i, n) for i in range(threads_n) for n in range(per_thread)]
