"""What observers (the console, telemetry) see: every call event and every run event, each
stamped with the time it was recorded; and nobody observing costs no clock read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import governance._firewall as firewall_module
from governance import ToolCall
from governance._firewall import Firewall, LifecycleEvent, StaticPolicy
from governance.policy._load import parse_policy
from governance.stores._audit import AuditLog
from governance.tools._registry import ToolRegistry
from tests.unit.governance.test_firewall import POLICY, PRINCIPAL, CountingSource


class Ticks:
    """time.time_ns as the firewall reads it: 1, 2, 3, ... one per read."""

    def __init__(self) -> None:
        self.reads = 0

    def time_ns(self) -> int:
        self.reads += 1
        return self.reads


@pytest.fixture
def ticks(monkeypatch: pytest.MonkeyPatch) -> Ticks:
    clock = Ticks()
    monkeypatch.setattr(firewall_module.time, "time_ns", clock.time_ns)
    return clock


@pytest.fixture
def firewall(tmp_path: Path) -> Iterator[Firewall]:
    log = AuditLog(tmp_path / "audit.sqlite")
    yield Firewall(ToolRegistry([CountingSource()]), StaticPolicy(parse_policy(POLICY)), log)
    log.close()


def _call(call_id: str = "c1") -> ToolCall:
    return ToolCall(call_id, "demo.read", {"path": "a"}, "run-1", PRINCIPAL)


def test_held_events_are_stamped_when_recorded_not_when_their_batch_is_written(
    firewall: Firewall, ticks: Ticks
) -> None:
    seen: list[LifecycleEvent] = []
    firewall.add_observer(seen.append)
    firewall.call(_call())
    # tool.requested and policy.decided are written in one transaction with execution.started,
    # yet each carries the moment it was recorded, in order.
    assert [(e.kind, e.at_ns) for e in seen] == [
        ("tool.requested", 1),
        ("policy.decided", 2),
        ("execution.started", 3),
        ("execution.completed", 4),
    ]


def test_nobody_observing_reads_no_clock(firewall: Firewall, ticks: Ticks) -> None:
    firewall.call(_call())
    firewall.record_run_event("run-1", "run.finished", {"status": "completed"})
    assert ticks.reads == 0


def test_run_events_reach_observers_with_no_call_and_no_tool(
    firewall: Firewall, ticks: Ticks
) -> None:
    seen: list[LifecycleEvent] = []
    firewall.add_observer(seen.append)
    data: dict[str, Any] = {"provider": "replay", "model": "m", "live": False}
    firewall.record_run_event("run-1", "run.started", data)
    firewall.call(_call())
    firewall.record_run_event("run-1", "run.finished", {"status": "completed"})
    run_events = [e for e in seen if not e.call_id]
    assert [(e.kind, e.run_id, e.tool, dict(e.data)) for e in run_events] == [
        ("run.started", "run-1", "", data),
        ("run.finished", "run-1", "", {"status": "completed"}),
    ]
    assert seen[0] is run_events[0] and seen[-1] is run_events[-1]  # in the order recorded
    assert [e.at_ns for e in seen] == sorted(e.at_ns for e in seen)


def test_a_run_event_that_cannot_be_written_reaches_no_observer(
    firewall: Firewall, ticks: Ticks, monkeypatch: pytest.MonkeyPatch
) -> None:
    from governance import AuditWriteError

    seen: list[LifecycleEvent] = []
    firewall.add_observer(seen.append)

    def refuse(*args: Any) -> None:
        raise AuditWriteError("disk full")

    monkeypatch.setattr(firewall._audit, "append", refuse)
    with pytest.raises(AuditWriteError):
        firewall.record_run_event("run-1", "run.started", {})
    assert seen == []


def test_an_observer_that_raises_on_a_run_event_changes_nothing(firewall: Firewall) -> None:
    def broken(event: LifecycleEvent) -> None:
        raise RuntimeError("observer bug")

    firewall.add_observer(broken)
    firewall.record_run_event("run-1", "run.started", {})
    assert firewall.call(_call()).outcome == "executed"
    assert [e.kind for e in firewall._audit.events("run-1")][0] == "run.started"  # type: ignore[attr-defined]
