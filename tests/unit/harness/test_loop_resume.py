"""A held run ends honestly; once decided it continues from its stored transcript."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter

from governance import ManualClock, Principal
from governance._gateway import Gateway
from governance.tools import outbox_rows
from harness._errors import HarnessError
from harness._loop import AgentLoop, RunState
from harness.providers._replay import ReplayProvider, ScriptStep

ANN = Principal("ann", "mail-bot", "support")
STEPS: TypeAdapter[list[ScriptStep]] = TypeAdapter(list[ScriptStep])
EMAIL = {"tool": "email.send", "args": {"to": "cfo@example.com", "subject": "Q3", "body": "hi"}}
SCRIPT = [
    {"calls": [EMAIL]},
    {
        "branch": {
            "executed": [{"answer": "Sent as message {{tool:email.send#outbox_id}}."}],
            "blocked": [{"answer": "I could not send it."}],
        }
    },
]


def _loop(governed: Gateway) -> AgentLoop:
    provider = ReplayProvider(STEPS.validate_python(SCRIPT))
    return AgentLoop(provider, governed.firewall)


def _held(governed: Gateway) -> RunState:
    state = _loop(governed).start("mail the CFO", run_id="run-1", principal=ANN)
    assert state.status == "waiting_approval" and state.held is not None
    # what another process would load: the state survives a JSON round trip
    return RunState.model_validate_json(state.model_dump_json())


def test_an_approved_call_executes_on_resume_and_the_run_carries_on(governed: Gateway) -> None:
    state = _held(governed)
    assert state.held is not None
    governed.firewall.approve(state.held.approval_id, "bob")
    done = _loop(governed).resume(state)
    assert (done.status, done.termination) == ("completed", "answered")
    assert done.final_answer == "Sent as message 1."
    assert len(outbox_rows(governed.workspace)) == 1
    assert governed.audit.verify("run-1").ok


def test_a_rejected_call_is_fed_back_as_a_refusal(governed: Gateway) -> None:
    state = _held(governed)
    assert state.held is not None
    governed.firewall.reject(state.held.approval_id, "bob", comment="wrong recipient")
    done = _loop(governed).resume(state)
    assert done.model_text == "I could not send it."
    assert done.status == "blocked"
    assert "email.send was refused (approval_rejected)" in (done.final_answer or "")
    tool_messages = [m for m in done.messages if m["role"] == "tool"]
    assert '"executed": false' in tool_messages[-1]["content"]
    assert outbox_rows(governed.workspace) == []


def test_an_expired_request_is_fed_back_as_a_refusal(governed: Gateway, clock: ManualClock) -> None:
    state = _held(governed)
    clock.advance(301)
    done = _loop(governed).resume(state)
    assert done.status == "blocked"
    assert done.tool_spans[-1].reason == "approval_expired"
    assert outbox_rows(governed.workspace) == []


def test_resuming_before_a_decision_changes_nothing(governed: Gateway) -> None:
    state = _held(governed)
    before = state.model_dump_json()
    again = _loop(governed).resume(state)
    assert again.model_dump_json() == before
    assert outbox_rows(governed.workspace) == []


def test_a_finished_run_cannot_be_resumed(governed: Gateway) -> None:
    state = _held(governed)
    assert state.held is not None
    governed.firewall.approve(state.held.approval_id, "bob")
    done = _loop(governed).resume(state)
    with pytest.raises(HarnessError, match="not waiting for approval"):
        _loop(governed).resume(done)
    assert len(outbox_rows(governed.workspace)) == 1




def test_an_approved_edit_is_what_the_trace_says_ran(governed: Gateway) -> None:
    state = _held(governed)
    assert state.held is not None
    governed.firewall.approve(
        state.held.approval_id, "bob", arguments={**EMAIL["args"], "subject": "Q3 (final)"}
    )
    done = _loop(governed).resume(state)
    held, executed = done.tool_spans
    assert held.arguments is not None and held.arguments["subject"] == "Q3"
    assert executed.arguments is not None and executed.arguments["subject"] == "Q3 (final)"
    assert [row["subject"] for row in outbox_rows(governed.workspace)] == ["Q3 (final)"]
