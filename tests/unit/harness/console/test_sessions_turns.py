"""Console agent turns: every event published as it happens, in order, and every ending honest."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from governance import ManualClock
from governance.tools import outbox_rows
from harness._errors import HarnessError
from harness._run_store import ProviderSpec, RunStore
from harness.console._providers import TurnProvider
from harness.console._sessions import SessionError
from harness.providers import Message, ModelTurn, ProviderIdentity, ReplayProvider, ToolSpec
from tests.unit.harness.console.conftest import EMAIL_SCRIPT, Console, wait_for

WRITE = {"tool": "fs.write", "args": {"path": "reports/a.md", "content": "hello"}}
WRITE_SCRIPT: list[Any] = [{"calls": [WRITE]}, {"answer": "Wrote it."}]


def _names(view: dict[str, Any]) -> list[str]:
    return [e["name"] for e in view["events"]]


def test_every_event_of_a_turn_is_published_on_the_hub_in_order(console: Console) -> None:
    sessions = console.open(WRITE_SCRIPT)
    run_id = sessions.start("write the report", "alice")
    view = wait_for(console, run_id, {"completed"})
    names = _names(view)
    for earlier, later in [
        ("running", "run.started"),
        ("run.started", "model.turn"),
        ("model.turn", "tool.requested"),
        ("tool.requested", "policy.decided"),
        ("policy.decided", "execution.started"),
        ("execution.started", "execution.completed"),
        ("execution.completed", "run.finished"),
        ("run.finished", "completed"),
    ]:
        assert names.index(earlier) < names.index(later), names
    assert [e["seq"] for e in view["events"]] == list(range(1, len(names) + 1))
    hub_ids = [e["hub_id"] for e in view["events"]]
    assert hub_ids == sorted(hub_ids) and len(set(hub_ids)) == len(hub_ids)
    published = {e.id: e for e in console.hub.after(0).events}
    for event in view["events"]:
        on_hub = published[event["hub_id"]]
        assert on_hub.topic == "run" and on_hub.data["run_id"] == run_id
        assert (on_hub.data["seq"], on_hub.data["name"]) == (event["seq"], event["name"])
    call_events = [e for e in view["events"] if e["kind"] == "call"]
    assert {(e["call_id"], e["tool"]) for e in call_events} == {("c1", "fs.write")}
    assert view["final_answer"] == "Wrote it." and view["hub_id"] >= hub_ids[-1]
    assert [m["role"] for m in view["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]


def test_the_principal_is_the_operator_as_the_console_agent(console: Console) -> None:
    sessions = console.open(WRITE_SCRIPT)
    run_id = sessions.start("write the report", "alice")
    wait_for(console, run_id, {"completed"})
    requested = [e for e in console.gateway.audit.events(run_id) if e.kind == "tool.requested"]
    assert requested[0].data["principal"] == {
        "actor": "alice",
        "agent": "console-agent",
        "team": "console",
    }


def test_the_run_is_stored_and_listed_as_it_changes(console: Console) -> None:
    sessions = console.open(EMAIL_SCRIPT)
    run_id = sessions.start("mail the CFO", "alice")
    wait_for(console, run_id, {"waiting_approval"})
    stored = RunStore(console.state_dir).load(run_id)
    assert stored.state.status == "waiting_approval" and stored.state.held is not None
    assert [(r["run_id"], r["status"], r["operator"]) for r in sessions.runs()] == [
        (run_id, "waiting_approval", "alice")
    ]


def test_a_held_call_waits_then_continues_by_itself_once_another_operator_approves(
    console: Console,
) -> None:
    sessions = console.open(EMAIL_SCRIPT)
    run_id = sessions.start("mail the CFO", "alice")
    held = wait_for(console, run_id, {"waiting_approval"})["held"]
    assert held["tool"] == "email.send" and held["status"] == "pending"
    assert held["proposed_by"] == "alice" and held["expires_at"]
    assert outbox_rows(console.gateway.workspace) == []

    console.gateway.firewall.approve(held["approval_id"], "bob")
    view = wait_for(console, run_id, {"completed"})
    assert view["final_answer"] == "Sent as message 1."
    assert len(outbox_rows(console.gateway.workspace)) == 1
    decided = [e for e in view["events"] if e["name"] == "decided"]
    assert decided[0]["data"]["decided_by"] == "bob" and decided[0]["data"]["status"] == "approved"
    names = _names(view)
    assert names.index("approval.required") < names.index("approval.approved")
    assert names.index("approval.approved") < names.index("approval.consumed")
    assert names.index("approval.consumed") < names.index("execution.completed")
    assert view["held"] is None
    assert sessions.wait_idle(run_id, 60)


def test_the_proposer_cannot_approve_their_own_held_call(console: Console) -> None:
    from governance import SelfApprovalError

    sessions = console.open(EMAIL_SCRIPT)
    run_id = sessions.start("mail the CFO", "alice")
    approval_id = wait_for(console, run_id, {"waiting_approval"})["held"]["approval_id"]
    with pytest.raises(SelfApprovalError):
        console.gateway.firewall.approve(approval_id, "alice")
    view = sessions.view(run_id)
    assert view["status"] == "waiting_approval" and view["held"]["status"] == "pending"
    assert outbox_rows(console.gateway.workspace) == []
    console.gateway.firewall.approve(approval_id, "bob")
    assert wait_for(console, run_id, {"completed"})["status"] == "completed"


def test_a_rejected_call_is_told_to_the_agent_and_the_turn_finishes(console: Console) -> None:
    sessions = console.open(EMAIL_SCRIPT)
    run_id = sessions.start("mail the CFO", "alice")
    approval_id = wait_for(console, run_id, {"waiting_approval"})["held"]["approval_id"]
    console.gateway.firewall.reject(approval_id, "bob", comment="wrong recipient")
    view = wait_for(console, run_id, {"blocked"})
    tool_messages = [m for m in view["messages"] if m["role"] == "tool"]
    assert '"executed": false' in tool_messages[-1]["content"]
    assert "approval_rejected" in tool_messages[-1]["content"]
    assert view["messages"][-1] == {"role": "assistant", "content": "I could not send it."}
    assert outbox_rows(console.gateway.workspace) == []


def test_an_approval_that_expires_while_waiting_continues_the_turn_with_the_call_refused(
    console: Console, clock: ManualClock
) -> None:
    sessions = console.open(EMAIL_SCRIPT)
    run_id = sessions.start("mail the CFO", "alice")
    wait_for(console, run_id, {"waiting_approval"})
    clock.advance(301)  # past the request's 300 s expiry: the store's wait reads it expired
    view = wait_for(console, run_id, {"blocked"})
    assert "approval_expired" in [m for m in view["messages"] if m["role"] == "tool"][-1]["content"]
    assert outbox_rows(console.gateway.workspace) == []
    decided = [e for e in view["events"] if e["name"] == "decided"]
    assert decided[0]["data"]["status"] == "expired"


def test_an_edit_approved_is_what_executes(console: Console) -> None:
    sessions = console.open(EMAIL_SCRIPT)
    run_id = sessions.start("mail the CFO", "alice")
    approval_id = wait_for(console, run_id, {"waiting_approval"})["held"]["approval_id"]
    edited = {"to": "cfo@example.com", "subject": "Q3 figures", "body": "corrected"}
    console.gateway.firewall.approve(approval_id, "bob", arguments=edited)
    wait_for(console, run_id, {"completed"})
    rows = outbox_rows(console.gateway.workspace)
    assert [(r["subject"], r["body"]) for r in rows] == [("Q3 figures", "corrected")]


def test_provider_failure_mid_turn_ends_the_run_failed_and_nothing_runs_after(
    console: Console,
) -> None:
    script: list[Any] = [
        {"calls": [WRITE]},
        {"provider_error": "server_error"},
    ]
    sessions = console.open(script)
    run_id = sessions.start("write the report", "alice")
    view = wait_for(console, run_id, {"provider_error"})
    names = _names(view)
    assert names.count("execution.completed") == 1
    after_error = names[names.index("provider.error") :]
    assert not {"tool.requested", "execution.started"} & set(after_error)
    assert "model provider failed" in view["final_answer"]
    assert sessions.wait_idle(run_id, 60)


class _Exploding:
    """A provider that breaks its contract (raises something other than ProviderError)."""

    identity = ProviderIdentity(name="exploding", model="x", live=False)

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        raise RuntimeError("wire protocol desynchronised")


def test_an_unexpected_error_in_a_turn_ends_it_failed_with_the_reason_shown(
    console: Console,
) -> None:
    spec = ProviderSpec(kind="replay", script=[])
    sessions = console.open(lambda: TurnProvider(_Exploding(), spec))
    run_id = sessions.start("anything", "alice")
    view = wait_for(console, run_id, {"failed"})
    assert "RuntimeError: wire protocol desynchronised" in view["detail"]
    assert sessions.wait_idle(run_id, 60)
    assert not [e for e in view["events"] if e["name"] == "execution.started"]


def test_two_turns_at_once_are_independent(console: Console) -> None:
    sessions = console.open(EMAIL_SCRIPT)
    first = sessions.start("mail the CFO", "alice")
    second = sessions.start("mail the CFO again", "carol")
    one = wait_for(console, first, {"waiting_approval"})["held"]["approval_id"]
    two = wait_for(console, second, {"waiting_approval"})["held"]["approval_id"]
    assert one != two
    console.gateway.firewall.approve(two, "bob")
    assert wait_for(console, second, {"completed"})["final_answer"] == "Sent as message 1."
    assert sessions.view(first)["status"] == "waiting_approval"
    console.gateway.firewall.reject(one, "bob", comment="no")
    assert wait_for(console, first, {"blocked"})["status"] == "blocked"
    assert len(outbox_rows(console.gateway.workspace)) == 1
    for run_id in (first, second):
        assert {e["data"].get("run_id", run_id) for e in sessions.view(run_id)["events"]} == {
            run_id
        }
        assert {e["call_id"] for e in sessions.view(run_id)["events"] if e["call_id"]} == {"c1"}


def test_a_blank_request_or_operator_is_refused_and_nothing_starts(console: Console) -> None:
    sessions = console.open(WRITE_SCRIPT)
    with pytest.raises(SessionError, match="empty"):
        sessions.start("   ", "alice")
    with pytest.raises(SessionError, match="operator"):
        sessions.start("write", " ")
    assert sessions.runs() == [] and console.hub.last_id == 0


def test_a_provider_that_cannot_be_built_refuses_the_turn(console: Console) -> None:
    def no_credential() -> TurnProvider:
        raise HarnessError("no PROCTOR_LLM_API_KEY")

    sessions = console.open(no_credential)
    with pytest.raises(SessionError, match="PROCTOR_LLM_API_KEY"):
        sessions.start("write", "alice")
    assert sessions.runs() == []


def test_secrets_in_arguments_and_model_text_never_reach_the_hub(console: Console) -> None:
    token = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789AB"
    script: list[Any] = [
        {"calls": [{"tool": "fs.write", "args": {"path": "reports/k.md", "content": token}}]},
        {"answer": f"Stored {token}."},
    ]
    sessions = console.open(script)
    run_id = sessions.start(f"store {token}", "alice")
    view = wait_for(console, run_id, {"completed"})
    assert token not in repr(view)
    assert all(token not in repr(e.data) for e in console.hub.after(0).events)


def test_events_of_runs_not_started_here_are_not_published(console: Console) -> None:
    from governance import Principal, ToolCall

    sessions = console.open(WRITE_SCRIPT)
    call = ToolCall("c1", "fs.write", {"path": "reports/z.md", "content": "x"}, "cli-run",
                    Principal("dave", "cli-agent", "cli"))  # fmt: skip
    console.gateway.firewall.call(call)
    assert console.hub.last_id == 0 and sessions.runs() == []


def test_a_thread_per_turn_and_none_left_after_close(console: Console) -> None:
    sessions = console.open(WRITE_SCRIPT)
    run_id = sessions.start("write", "alice")
    wait_for(console, run_id, {"completed"})
    sessions.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("console-turn-")]
    with pytest.raises(SessionError, match="shutting down"):
        sessions.start("write", "alice")


def test_a_provider_for_each_turn_comes_from_the_factory(console: Console) -> None:
    built: list[str] = []

    def factory() -> TurnProvider:
        built.append("x")
        spec = ProviderSpec(kind="replay", script=WRITE_SCRIPT)
        from pydantic import TypeAdapter

        from harness.providers import ScriptStep

        steps = TypeAdapter(list[ScriptStep]).validate_python(WRITE_SCRIPT)
        return TurnProvider(ReplayProvider(steps), spec)

    sessions = console.open(factory)
    for _ in range(2):
        wait_for(console, sessions.start("write", "alice"), {"completed"})
    assert built == ["x", "x"]
