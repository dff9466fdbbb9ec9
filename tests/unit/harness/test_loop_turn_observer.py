"""The loop's turn observer (`--otel`): one record per `provider.complete`, nothing else changes."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from governance import Principal
from governance.telemetry import TurnRecord
from harness._errors import ProviderError
from harness._loop import AgentLoop, RunState
from harness.providers._base import (
    Message,
    ModelTurn,
    ProposedCall,
    ProviderIdentity,
    ToolSpec,
    Usage,
)
from harness.providers._replay import ReplayProvider, ScriptStep

PRINCIPAL = Principal("ann", "support-bot", "support")
STEPS: TypeAdapter[list[ScriptStep]] = TypeAdapter(list[ScriptStep])
LOOKUP = {"tool": "orders.lookup", "args": {"order_id": "ORD-0001"}}
TWO_CALLS_THEN_ANSWER: list[dict[str, Any]] = [
    {"calls": [LOOKUP, {"tool": "fs.read", "args": {"path": "README.txt"}}]},
    {"answer": "done"},
]
REPO = Path(__file__).resolve().parents[3]


class Vendor:
    """A provider that reports usage and finish reasons, as a live one does."""

    identity = ProviderIdentity(name="openai", model="gpt-test", live=True)

    def __init__(self, turns: Sequence[ModelTurn | ProviderError]) -> None:
        self._turns = list(turns)

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        turn = self._turns.pop(0)
        if isinstance(turn, ProviderError):
            raise turn
        return turn


def _start(governed: Any, provider: Any, observer: Any = None) -> RunState:
    loop = AgentLoop(provider, governed.firewall, turn_observer=observer)
    return loop.start("help me", run_id="run-1", principal=PRINCIPAL)


def _replay(script: list[dict[str, Any]]) -> ReplayProvider:
    return ReplayProvider(STEPS.validate_python(script))


def test_each_model_turn_is_handed_over_with_its_run_model_usage_and_proposed_calls(
    governed: Any,
) -> None:
    seen: list[TurnRecord] = []
    call = ProposedCall("call_1", "orders.lookup", '{"order_id": "ORD-0001"}')
    vendor = Vendor(
        [
            ModelTurn(None, (call,), Usage(120, 7), "tool_calls"),
            ModelTurn("ORD-0001 is shipped.", (), None, "stop"),
        ]
    )
    state = _start(governed, vendor, seen.append)
    assert state.status == "completed"
    assert [(t.run_id, t.provider, t.model, t.live) for t in seen] == [
        ("run-1", "openai", "gpt-test", True)
    ] * 2
    assert [(t.input_tokens, t.output_tokens) for t in seen] == [(120, 7), (None, None)]
    assert [(t.finish_reason, t.tool_calls, t.error_kind) for t in seen] == [
        ("tool_calls", 1, None),
        ("stop", 0, None),
    ]
    assert all(0 < t.started_ns <= t.ended_ns for t in seen)
    assert seen[0].ended_ns <= seen[1].started_ns


def test_a_provider_error_is_handed_over_with_its_kind_and_the_run_still_stops_on_it(
    governed: Any,
) -> None:
    seen: list[TurnRecord] = []
    vendor = Vendor([ProviderError("rate_limited", "slow down", status=429)])
    state = _start(governed, vendor, seen.append)
    assert (state.status, state.termination) == ("provider_error", "provider_error")
    assert [(t.error_kind, t.finish_reason, t.tool_calls, t.input_tokens) for t in seen] == [
        ("rate_limited", None, 0, None)
    ]


def test_a_run_is_the_same_with_and_without_an_observer(governed: Any) -> None:
    plain = _start(governed, _replay(TWO_CALLS_THEN_ANSWER))
    seen: list[TurnRecord] = []
    loop = AgentLoop(_replay(TWO_CALLS_THEN_ANSWER), governed.firewall, turn_observer=seen.append)
    observed = loop.start("help me", run_id="run-2", principal=PRINCIPAL)
    assert len(seen) == 2
    assert observed.model_dump(exclude={"run_id"}) == plain.model_dump(exclude={"run_id"})


def test_an_observer_that_raises_neither_stops_nor_changes_the_run(governed: Any) -> None:
    def broken(turn: TurnRecord) -> None:
        raise RuntimeError("the exporter is broken")

    plain = _start(governed, _replay(TWO_CALLS_THEN_ANSWER))
    loop = AgentLoop(_replay(TWO_CALLS_THEN_ANSWER), governed.firewall, turn_observer=broken)
    observed = loop.start("help me", run_id="run-2", principal=PRINCIPAL)
    assert observed.status == "completed"
    assert observed.model_dump(exclude={"run_id"}) == plain.model_dump(exclude={"run_id"})


def test_a_resumed_run_hands_over_the_turns_after_the_decision(governed: Any) -> None:
    email = {"tool": "email.send", "args": {"to": "a@b.co", "subject": "s", "body": "b"}}
    seen: list[TurnRecord] = []
    loop = AgentLoop(
        _replay([{"calls": [email]}, {"answer": "sent"}]),
        governed.firewall,
        turn_observer=seen.append,
    )
    state = loop.start("mail them", run_id="run-1", principal=PRINCIPAL)
    assert state.status == "waiting_approval" and len(seen) == 1
    assert state.held is not None
    governed.firewall.approve(state.held.approval_id, "rita", comment="ok")
    state = loop.resume(state)
    assert state.status == "completed"
    assert [t.run_id for t in seen] == ["run-1", "run-1"]


def test_without_an_observer_the_loop_reads_no_clock(
    governed: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_clock() -> int:
        raise AssertionError("a loop without a turn observer read the wall clock")

    monkeypatch.setattr(time, "time_ns", no_clock)
    assert _start(governed, _replay(TWO_CALLS_THEN_ANSWER)).status == "completed"


def test_without_an_observer_the_loop_imports_no_telemetry_module(tmp_path: Path) -> None:
    probe = """
import sys
from pathlib import Path
from governance import Gateway, Principal
from harness._loop import AgentLoop
from harness.providers._replay import ReplayProvider
from pydantic import TypeAdapter
from harness.providers._replay import ScriptStep
policy = Path("governance/data/default_policy.yaml")
script = TypeAdapter(list[ScriptStep]).validate_python([{"answer": "hi"}])
with Gateway(state_dir=Path(sys.argv[1]), policy_path=policy) as gateway:
    state = AgentLoop(ReplayProvider(script), gateway.firewall).start(
        "hello", run_id="r", principal=Principal("a", "b", "c"))
assert state.status == "completed", state.status
print(sorted(m for m in sys.modules if m.startswith(("governance.telemetry", "opentelemetry"))))
"""
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "state")],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
