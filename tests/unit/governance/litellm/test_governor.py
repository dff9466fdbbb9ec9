"""The governor behind the LiteLLM guardrail, without LiteLLM: the hooks' calls are played by
the test (`before` = the pre-MCP-call hook, `after`/`failed` = the post-call hooks)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from governance.core._contracts import Principal, ToolCall
from governance.litellm import BrokeredCall, GoAhead, Refused, ToolCallGovernor, settings_from
from governance.litellm._handoff import HandoffSource, Ticket
from governance.litellm._response_sites import withhold_disallowed
from governance.litellm._streamed_calls import StreamedCalls

POLICY = """\
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - {id: echo, effect: allow, match: {tool: mcp.demo.echo}}
  - {id: wipe, effect: require_approval, match: {tool: mcp.demo.wipe}}
  - {id: env, effect: block, match: {tool: mcp.demo.env}}
  - {id: lookup, effect: allow, match: {tool: fn.lookup}}
  - {id: big, effect: allow, match: {tool: mcp.demo.big}}
budgets:
  - {id: three-bigs, scope: team, limit: 3, window_seconds: 3600, counts: [write],
     tools: [mcp.demo.big]}
  - {id: one-wipe, scope: actor, limit: 1, window_seconds: 3600, counts: [destructive],
     tools: [mcp.demo.wipe]}
"""
READ = {"action_type": "read", "risk": "low", "reversible": True, "external_side_effect": False}
WIPE = {"action_type": "destructive", "risk": "high", "reversible": False,
        "external_side_effect": True}  # fmt: skip
ECHO_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "repeatCount": {"type": "integer", "default": 1}},
    "required": ["text"],
}
ANN = Principal("ann", "key-ann", "support")


@pytest.fixture
def governor(tmp_path: Path) -> Any:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    settings = settings_from(
        {
            "proctor_policy": str(policy),
            "proctor_state_dir": str(tmp_path / "state"),
            "proctor_tools": {
                "mcp.demo.echo": READ,
                "mcp.demo.wipe": WIPE,
                "fn.lookup": READ,
                "mcp.demo.big": {**READ, "action_type": "write"},
            },
        },
        {},
    )
    made = ToolCallGovernor(settings)
    yield made
    made.close()


_SEQ = iter(range(1, 10_000))


def _call(
    tool: str, arguments: dict[str, Any], schema: dict[str, Any] | None = None
) -> BrokeredCall:
    n = next(_SEQ)
    return BrokeredCall(
        server="demo",
        tool=tool,
        arguments=arguments,
        principal=ANN,
        run_id=f"litellm-{n}",
        call_id=f"c-{n}",
        correlation=f"corr-{n}",
        input_schema=schema,
    )


def _kinds(governor: ToolCallGovernor, run_id: str) -> list[str]:
    return [event.kind for event in governor.gateway.audit.events(run_id)]


def test_an_allowed_call_is_handed_over_as_judged_and_its_outcome_recorded(
    governor: ToolCallGovernor,
) -> None:
    call = _call("echo", {"text": "hi"}, ECHO_SCHEMA)

    async def scenario() -> GoAhead:
        go = await governor.before(call)
        # Handed over: the write-ahead record is down, the outcome is not yet.
        assert _kinds(governor, call.run_id)[-1] == "execution.started"
        assert governor.in_flight == 1
        await governor.after(call.correlation, "hi", is_error=False)
        return go

    go = asyncio.run(scenario())
    assert go.arguments == {"text": "hi", "repeatCount": 1}  # the schema default, applied
    assert governor.in_flight == 0
    assert _kinds(governor, call.run_id) == [
        "tool.requested",
        "policy.decided",
        "execution.started",
        "execution.completed",
    ]


def test_a_blocked_call_is_refused_and_never_handed_over(governor: ToolCallGovernor) -> None:
    call = _call("env", {})
    with pytest.raises(Refused) as caught:
        asyncio.run(governor.before(call))
    assert caught.value.status == "blocked"
    assert caught.value.detail()["reason"] == "blocked_by_rule"
    assert caught.value.detail()["error"].endswith("nothing was executed")
    assert "execution.started" not in _kinds(governor, call.run_id)
    assert governor.in_flight == 0


def test_an_unregistered_and_unmapped_tool_is_blocked(governor: ToolCallGovernor) -> None:
    with pytest.raises(Refused) as caught:
        asyncio.run(governor.before(_call("shell", {"cmd": "rm -rf /"})))
    assert caught.value.status == "blocked"


def test_a_held_call_waits_and_a_retry_runs_it_once_after_approval(
    governor: ToolCallGovernor,
) -> None:
    first = _call("wipe", {"target": "prod"})
    with pytest.raises(Refused) as held:
        asyncio.run(governor.before(first))
    approval_id = held.value.result.approval_id
    assert held.value.status == "waiting_approval"
    assert f"proctor approvals approve {approval_id} --reviewer NAME" in held.value.message
    # A retry before the decision names the same request and parks no second one.
    with pytest.raises(Refused) as again:
        asyncio.run(governor.before(_call("wipe", {"target": "prod"})))
    assert again.value.result.approval_id == approval_id
    assert again.value.run_id == first.run_id
    assert len(governor.gateway.approvals.list()) == 1

    assert approval_id is not None
    governor.gateway.firewall.approve(approval_id, "rev")
    retry = _call("wipe", {"target": "prod"})

    async def run_it() -> GoAhead:
        go = await governor.before(retry)
        await governor.after(retry.correlation, "wiped", is_error=False)
        return go

    assert asyncio.run(run_it()).arguments == {"target": "prod"}
    assert governor.gateway.approvals.get(approval_id).consumed
    # Recorded on the held call's own run, after the approval.
    assert _kinds(governor, first.run_id)[-3:] == [
        "approval.consumed",
        "execution.started",
        "execution.completed",
    ]
    # Used up: the same call again is decided afresh, and the budget of one is spent.
    with pytest.raises(Refused) as later:
        asyncio.run(governor.before(_call("wipe", {"target": "prod"})))
    assert (later.value.status, later.value.result.reason) == ("blocked", "budget_exhausted:actor")


def test_an_approval_never_runs_other_arguments(governor: ToolCallGovernor) -> None:
    with pytest.raises(Refused) as held:
        asyncio.run(governor.before(_call("wipe", {"target": "prod"})))
    assert held.value.result.approval_id is not None
    governor.gateway.firewall.approve(held.value.result.approval_id, "rev")
    with pytest.raises(Refused) as other:
        asyncio.run(governor.before(_call("wipe", {"target": "prod", "also": "backups"})))
    assert other.value.status == "waiting_approval"
    assert other.value.result.approval_id != held.value.result.approval_id


def test_a_failure_reported_after_hand_over_keeps_the_budget_slot(
    governor: ToolCallGovernor,
) -> None:
    with pytest.raises(Refused) as held:
        asyncio.run(governor.before(_call("wipe", {"target": "a"})))
    assert held.value.result.approval_id is not None
    governor.gateway.firewall.approve(held.value.result.approval_id, "rev")
    retry = _call("wipe", {"target": "a"})

    async def run_it() -> None:
        await governor.before(retry)
        await governor.failed(retry.correlation, "ConnectionError: server went away")

    asyncio.run(run_it())
    failed = governor.gateway.audit.events(held.value.run_id)[-1]
    assert failed.kind == "execution.failed"
    assert failed.data["effect"] == "unknown"
    # It may have landed: the one-wipe budget stays spent.
    with pytest.raises(Refused) as next_one:
        asyncio.run(governor.before(_call("wipe", {"target": "b"})))
    assert next_one.value.result.reason == "budget_exhausted:actor"


def test_concurrent_calls_get_exactly_the_budget_s_slots(governor: ToolCallGovernor) -> None:
    calls = [_call("big", {"chars": n}) for n in range(10)]

    async def one(call: BrokeredCall) -> str:
        try:
            await governor.before(call)
        except Refused as refused:
            return str(refused.result.reason)
        await governor.after(call.correlation, "x" * 3, is_error=False)
        return "ran"

    async def all_at_once() -> list[str]:
        return list(await asyncio.gather(*(one(call) for call in calls)))

    outcomes = asyncio.run(all_at_once())
    assert sorted(outcomes) == ["budget_exhausted:team"] * 7 + ["ran"] * 3
    assert governor.in_flight == 0


def test_a_changed_input_schema_is_refused(governor: ToolCallGovernor) -> None:
    async def scenario() -> None:
        first = _call("echo", {"text": "a"}, ECHO_SCHEMA)
        await governor.before(first)
        await governor.after(first.correlation, "a", is_error=False)

    asyncio.run(scenario())
    changed = {**ECHO_SCHEMA, "properties": {"text": {"type": "string"}, "to": {}}}
    with pytest.raises(Refused) as caught:
        asyncio.run(governor.before(_call("echo", {"text": "b"}, changed)))
    assert caught.value.result.reason == "tool_definition_changed"


def test_the_hand_off_refuses_a_call_no_ticket_is_bound_to() -> None:
    result = HandoffSource(1.0).call(ToolCall("c1", "mcp.demo.echo", {}, "r1", ANN))
    assert (result.outcome, result.reason, result.before_effect) == (
        "failed",
        "caller_gone",
        True,
    )


def test_an_outcome_never_reported_is_unknown_not_released() -> None:
    source = HandoffSource(0.01)
    loop = asyncio.new_event_loop()
    try:
        ticket = Ticket(loop)
        results: list[Any] = []

        def worker() -> None:
            source.bind(ticket)
            results.append(source.call(ToolCall("c1", "mcp.demo.wipe", {}, "r1", ANN)))

        thread = threading.Thread(target=worker)
        thread.start()
        thread.join(timeout=30)
    finally:
        loop.close()
    (result,) = results
    assert (result.outcome, result.reason, result.before_effect) == (
        "failed",
        "outcome_unknown",
        False,
    )


def test_a_hook_that_left_first_wins_over_a_late_hand_over() -> None:
    loop = asyncio.new_event_loop()
    try:
        ticket = Ticket(loop)
        assert ticket.abandon() is True
        assert ticket.go({"x": 1}) is False
        assert not ticket.gate.done()
    finally:
        loop.close()


def _response(*names_and_arguments: tuple[str, str]) -> Any:
    calls = [
        SimpleNamespace(function=SimpleNamespace(name=name, arguments=arguments))
        for name, arguments in names_and_arguments
    ]
    message = SimpleNamespace(content=None, tool_calls=calls)
    return SimpleNamespace(choices=[SimpleNamespace(message=message, finish_reason="tool_calls")])


def test_a_model_response_keeps_allowed_tool_calls_and_withholds_the_rest(
    governor: ToolCallGovernor,
) -> None:
    asyncio.run(_register_echo(governor))
    response = _response(
        ("demo-echo", '{"text": "hi"}'),
        ("lookup", "{}"),
        ("demo-env", "{}"),
        ("shell", '{"cmd": "id"}'),
        ("lookup", "not json"),
    )
    withheld = withhold_disallowed(governor, response, ANN, "litellm-response")
    choice = response.choices[0]
    assert [c.function.name for c in choice.message.tool_calls] == ["demo-echo", "lookup"]
    assert withheld == ["demo-env", "shell", "lookup"]
    assert "the call to shell was withheld (block: unknown_tool)" in choice.message.content
    assert "the call to demo-env was withheld (block: unknown_tool)" in choice.message.content
    assert "the call to lookup was withheld (block: invalid_arguments)" in choice.message.content
    assert choice.finish_reason == "tool_calls"
    rejected = [e for e in governor.gateway.audit.events("litellm-response")]
    assert [e.kind for e in rejected] == ["guardrail.rejected"] * 3


def test_a_response_whose_every_call_is_withheld_stops_asking_for_tools(
    governor: ToolCallGovernor,
) -> None:
    response = _response(("shell", "{}"))
    withhold_disallowed(governor, response, ANN, "litellm-response-2")
    choice = response.choices[0]
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"


async def _register_echo(governor: ToolCallGovernor) -> None:
    call = _call("echo", {"text": "x"}, ECHO_SCHEMA)
    await governor.before(call)
    await governor.after(call.correlation, "x", is_error=False)


def _chunk(
    content: str | None = None,
    calls: tuple[tuple[int, str, str], ...] | list[tuple[int, str, str]] = (),
    finish: str | None = None,
) -> Any:
    deltas = [
        SimpleNamespace(index=i, function=SimpleNamespace(name=name, arguments=arguments))
        for i, name, arguments in calls
    ]
    delta = SimpleNamespace(content=content, tool_calls=deltas or None)
    return SimpleNamespace(choices=[SimpleNamespace(index=0, delta=delta, finish_reason=finish)])


def test_a_stream_passes_text_at_once_and_releases_only_the_allowed_calls(
    governor: ToolCallGovernor,
) -> None:
    streamed = StreamedCalls()
    text = _chunk("Let me look")
    assert streamed.feed(text) == [text]  # no tool call yet: it goes out now
    chunks = [
        _chunk(calls=[(0, "shell", "")]),
        _chunk(calls=[(0, "", '{"cmd": "id"}'), (1, "lookup", "")]),
        _chunk(calls=[(1, "", "{}")]),
        _chunk(content=" (late text)"),  # after a call began: it waits with the rest
        _chunk(finish="tool_calls"),
    ]
    assert all(streamed.feed(chunk) == [] for chunk in chunks)
    released = streamed.release(governor, ANN, "litellm-stream")
    names = [
        d.function.name
        for c in released
        for d in (c.choices[0].delta.tool_calls or [])
        if d.function.name
    ]
    assert names == ["lookup"]
    notes = "".join(c.choices[0].delta.content or "" for c in released)
    assert "the call to shell was withheld (block: unknown_tool)" in notes
    assert released[-1].choices[0].finish_reason == "tool_calls"  # lookup is still asked for
    assert [e.kind for e in governor.gateway.audit.events("litellm-stream")] == [
        "guardrail.rejected"
    ]


def test_a_stream_whose_every_call_is_withheld_finishes_as_a_plain_answer(
    governor: ToolCallGovernor,
) -> None:
    streamed = StreamedCalls()
    for chunk in (_chunk(calls=[(0, "shell", "{}")]), _chunk(finish="tool_calls")):
        streamed.feed(chunk)
    released = streamed.release(governor, ANN, "litellm-stream-2")
    assert all(not c.choices[0].delta.tool_calls for c in released)
    assert released[-1].choices[0].finish_reason == "stop"
