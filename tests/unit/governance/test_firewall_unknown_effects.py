"""A call that fails after dispatch may have had its effect: its budget slot stays counted.

Through the gateway (real SQLite budget and audit stores): a destructive tool that times out,
raises, fails with a reason of its own or is cancelled keeps its slot (the next call at the
limit is denied) and the audit says `effect: unknown`; a call refused before dispatch (schema,
policy, budget, a tool's own pre-effect refusal) releases it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from governance import ManualClock, Principal, ToolCall, ToolDescriptor, ToolResult
from governance._gateway import Gateway
from governance.tools import LocalToolSource, ToolExecutionError, local_tool

POLICY = """
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - id: wipes
    effect: allow
    match: {tool: [ops.wipe, ops.timeout]}
  - id: wipes-need-a-name
    effect: block
    match: {tool: ops.wipe}
    when: [{arg: target, enum: [forbidden]}]
  - id: held-wipes
    effect: require_approval
    match: {tool: ops.held_wipe}
budgets:
  - id: one-per-run
    scope: agent_run
    limit: 1
    window_seconds: 3600
"""

ANN = Principal("ann", "cleaner", "ops")


class WipeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    target: str


class Behaviour:
    """What the destructive tool does when it runs: it always lands its effect first."""

    def __init__(self) -> None:
        self.then: Callable[[], object] = lambda: "wiped"
        self.refuse: str | None = None  # a reason to refuse with before anything happens
        self.landed: list[str] = []

    def run(self, args: WipeArgs) -> object:
        if self.refuse is not None:
            message = f"refused {args.target!r}; nothing changed"
            raise ToolExecutionError(self.refuse, message, before_effect=True)
        self.landed.append(args.target)  # the side effect happens...
        return self.then()  # ...and then the tool answers (or does not)


class TimingOut:
    """A source whose destructive tool ran and then reports a timeout (as an MCP source does)."""

    name = "remote"

    def __init__(self) -> None:
        self.calls = 0

    def list_tools(self) -> list[ToolDescriptor]:
        return [
            ToolDescriptor(
                name="ops.timeout",
                description="wipes remotely",
                input_schema=WipeArgs.model_json_schema(),
                source="remote",
                action_type="destructive",
                risk="high",
                reversible=False,
                external_side_effect=True,
                idempotent=False,
            )
        ]

    def call(self, call: ToolCall) -> ToolResult:
        self.calls += 1
        return ToolResult(
            call_id=call.call_id,
            tool=call.tool,
            outcome="failed",
            error="no answer within 1s",
            reason="timeout",
        )


def _tools(behaviour: Behaviour) -> LocalToolSource:
    def wipe_tool(name: str) -> Any:
        return local_tool(
            name,
            description="wipes the target",
            args=WipeArgs,
            action_type="destructive",
            risk="high",
            reversible=False,
        )(behaviour.run)

    return LocalToolSource([wipe_tool("ops.wipe"), wipe_tool("ops.held_wipe")], name="ops")


@pytest.fixture
def behaviour() -> Behaviour:
    return Behaviour()


@pytest.fixture
def remote() -> TimingOut:
    return TimingOut()


@pytest.fixture
def gateway(
    tmp_path: Path, clock: ManualClock, behaviour: Behaviour, remote: TimingOut
) -> Iterator[Gateway]:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    with Gateway(
        state_dir=tmp_path / "state",
        policy_path=policy,
        clock=clock,
        builtin=False,
        sources=[_tools(behaviour), remote],
    ) as gw:
        yield gw


def _wipe(n: int, target: str = "db", tool: str = "ops.wipe") -> ToolCall:
    return ToolCall(f"c{n}", tool, {"target": target}, "run-1", ANN)


def _failed_events(gateway: Gateway) -> list[dict[str, Any]]:
    return [dict(e.data) for e in gateway.audit.events("run-1") if e.kind == "execution.failed"]


def _assert_slot_kept(gateway: Gateway, behaviour: Behaviour, first: ToolResult) -> None:
    assert first.outcome == "failed"
    second = gateway.firewall.call(_wipe(2, "logs"))
    assert (second.outcome, second.reason) == ("blocked", "budget_exhausted:agent_run")
    assert "logs" not in behaviour.landed
    assert [row.status for row in gateway.budgets.ledger("one-per-run")] == ["unknown"]
    (failed,) = _failed_events(gateway)
    assert (failed["reason"], failed["effect"]) == (first.reason, "unknown")


def test_a_tool_that_raises_after_its_effect_keeps_its_budget_slot(
    gateway: Gateway, behaviour: Behaviour
) -> None:
    def boom() -> object:
        raise RuntimeError("the disk went away after the write")

    behaviour.then = boom
    first = gateway.firewall.call(_wipe(1))
    assert first.reason == "tool_error" and behaviour.landed == ["db"]
    _assert_slot_kept(gateway, behaviour, first)


def test_a_timeout_after_dispatch_keeps_its_budget_slot(
    gateway: Gateway, behaviour: Behaviour, remote: TimingOut
) -> None:
    first = gateway.firewall.call(_wipe(1, tool="ops.timeout"))
    assert first.reason == "timeout" and remote.calls == 1
    _assert_slot_kept(gateway, behaviour, first)


def test_a_tool_failure_with_a_reason_of_its_own_keeps_its_budget_slot(
    gateway: Gateway, behaviour: Behaviour
) -> None:
    # A reason nobody told the firewall about may come after the effect: fail closed.
    def upstream() -> object:
        raise ToolExecutionError("upstream_502", "the payment provider answered 502")

    behaviour.then = upstream
    first = gateway.firewall.call(_wipe(1))
    assert first.reason == "upstream_502" and behaviour.landed == ["db"]
    _assert_slot_kept(gateway, behaviour, first)


def test_an_output_that_cannot_be_rendered_after_the_effect_keeps_its_budget_slot(
    gateway: Gateway, behaviour: Behaviour
) -> None:
    behaviour.then = lambda: {"wiped": float("nan")}  # not JSON: fails after the tool ran
    first = gateway.firewall.call(_wipe(1))
    assert first.reason == "tool_error" and behaviour.landed == ["db"]
    _assert_slot_kept(gateway, behaviour, first)


@pytest.mark.parametrize("interruption", [asyncio.CancelledError, KeyboardInterrupt])
def test_a_call_cancelled_mid_tool_keeps_its_slot_and_records_an_unknown_outcome(
    gateway: Gateway, behaviour: Behaviour, interruption: type[BaseException]
) -> None:
    def cancelled() -> object:
        raise interruption()

    behaviour.then = cancelled
    with pytest.raises(interruption):
        gateway.firewall.call(_wipe(1))
    assert behaviour.landed == ["db"]
    assert [row.status for row in gateway.budgets.ledger("one-per-run")] == ["unknown"]
    (failed,) = _failed_events(gateway)
    assert (failed["reason"], failed["effect"]) == ("cancelled", "unknown")
    behaviour.then = lambda: "wiped"
    second = gateway.firewall.call(_wipe(2, "logs"))
    assert (second.outcome, second.reason) == ("blocked", "budget_exhausted:agent_run")


def test_an_approved_call_that_fails_after_dispatch_keeps_its_budget_slot(
    gateway: Gateway, behaviour: Behaviour
) -> None:
    def boom() -> object:
        raise TimeoutError("the tool gave up waiting for its own backend")

    held_call = _wipe(1, tool="ops.held_wipe")
    held = gateway.firewall.call(held_call)
    assert held.outcome == "held" and held.approval_id is not None
    gateway.firewall.approve(held.approval_id, "bob")
    behaviour.then = boom
    resumed = gateway.firewall.resume_held(held.approval_id, held_call)
    assert (resumed.outcome, resumed.reason) == ("failed", "tool_error")
    assert behaviour.landed == ["db"]
    _assert_slot_kept(gateway, behaviour, resumed)


def test_a_known_refusal_reason_raised_after_the_effect_keeps_its_budget_slot(
    gateway: Gateway, behaviour: Behaviour
) -> None:
    # The reason alone says nothing about whether the effect landed: only the tool can.
    def gone() -> object:
        raise ToolExecutionError("not_found", "record db no longer exists")  # re-read after delete

    behaviour.then = gone
    first = gateway.firewall.call(_wipe(1))
    assert first.reason == "not_found" and behaviour.landed == ["db"]
    _assert_slot_kept(gateway, behaviour, first)


@pytest.mark.parametrize(
    "reason", ["server_unavailable", "unknown_tool", "tool_definition_changed", "exists"]
)
def test_a_source_failure_with_a_pre_dispatch_reason_after_committing_keeps_its_slot(
    gateway: Gateway, behaviour: Behaviour, remote: TimingOut, reason: str
) -> None:
    def committed_then_failed(call: ToolCall) -> ToolResult:
        remote.calls += 1
        message = "503 from upstream after commit"
        return ToolResult(call.call_id, call.tool, "failed", error=message, reason=reason)

    remote.call = committed_then_failed  # type: ignore[method-assign]
    first = gateway.firewall.call(_wipe(1, tool="ops.timeout"))
    assert first.reason == reason and remote.calls == 1
    _assert_slot_kept(gateway, behaviour, first)


def test_a_source_that_states_it_sent_nothing_releases_the_slot(
    gateway: Gateway, behaviour: Behaviour, remote: TimingOut
) -> None:
    def refused(call: ToolCall) -> ToolResult:
        return ToolResult(
            call.call_id,
            call.tool,
            "failed",
            error="not connected; nothing was sent",
            reason="server_unavailable",
            before_effect=True,
        )

    remote.call = refused  # type: ignore[method-assign]
    assert gateway.firewall.call(_wipe(1, tool="ops.timeout")).reason == "server_unavailable"
    _assert_slot_released(gateway, behaviour)


# -- refused before dispatch: the slot is released ------------------------------------------


def _assert_slot_released(gateway: Gateway, behaviour: Behaviour) -> None:
    assert [row.status for row in gateway.budgets.ledger("one-per-run")] in ([], ["released"])
    assert all(e["effect"] == "none" for e in _failed_events(gateway))
    after = gateway.firewall.call(_wipe(9, "tmp"))
    assert after.outcome == "executed", after.error
    assert behaviour.landed == ["tmp"]


def test_a_schema_error_takes_no_budget_slot(gateway: Gateway, behaviour: Behaviour) -> None:
    bad = ToolCall("c1", "ops.wipe", {"target": 7}, "run-1", ANN)
    assert gateway.firewall.call(bad).reason == "invalid_arguments"
    _assert_slot_released(gateway, behaviour)


def test_a_policy_block_takes_no_budget_slot(gateway: Gateway, behaviour: Behaviour) -> None:
    blocked = gateway.firewall.call(_wipe(1, "forbidden"))
    assert blocked.outcome == "blocked" and blocked.decision is not None
    assert blocked.decision.rule_ids == ("wipes-need-a-name",)
    _assert_slot_released(gateway, behaviour)


def test_a_budget_denial_takes_no_further_slot(gateway: Gateway, behaviour: Behaviour) -> None:
    assert gateway.firewall.call(_wipe(1, "a")).outcome == "executed"
    denied = gateway.firewall.call(_wipe(2, "b"))
    assert denied.reason == "budget_exhausted:agent_run"
    assert [row.status for row in gateway.budgets.ledger("one-per-run")] == ["executed"]
    assert behaviour.landed == ["a"]


def test_a_tools_own_refusal_before_any_effect_releases_the_slot(
    gateway: Gateway, behaviour: Behaviour
) -> None:
    behaviour.refuse = "not_found"
    assert gateway.firewall.call(_wipe(1, "ghost")).reason == "not_found"
    behaviour.refuse = None
    _assert_slot_released(gateway, behaviour)
