"""Judging the tool calls in a model's response: LiteLLM does not execute them, its client does,
so a call that policy would not allow is taken out of the response before the client sees it
(where they sit in each response shape: `_response_sites`, `_streamed_calls`).

Names: a function `<server>-<tool>` whose `mcp.<server>.<tool>` Proctor knows (LiteLLM offers
its MCP tools to models under that name) is judged as that tool; any other function `<name>`
is judged as `fn.<name>`, with the facts `proctor_tools` gives it (unmapped: `unknown`, which
policy can only hold or block). Only `allow` stays: a call policy would hold is withheld too,
since the client would run it without anyone approving it. Budgets are not charged here (the
call is not executed here); each withheld call is audited (`guardrail.rejected`) on the run.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from governance.core._contracts import Decision, Principal, ToolCall, ToolDescriptor
from governance.core._errors import GovernanceError
from governance.mcp._config import ToolMapping
from governance.mcp._mapping import governed_facts

if TYPE_CHECKING:
    from governance.litellm._governor import ToolCallGovernor

_FUNCTION = re.compile(r"[A-Za-z0-9_-]{1,128}")


def _tool_name(governor: ToolCallGovernor, function: str) -> str:
    """The Proctor name a model's function is judged under. The judging firewall has a registry
    of its own: a placeholder registered here never stands in for an MCP tool's real listing.
    A name neither seen through MCP nor in `proctor_tools` stays unregistered, so the policy's
    `unknown_tool` default decides it."""
    server, _, tool = function.partition("-")
    mcp_name = f"mcp.{server}.{tool}" if tool else ""
    known = governor.gateway.firewall.registry
    for name in (mcp_name, f"fn.{function}"):
        if not name:
            continue
        if name in governor.response_registry:
            return name
        seen = known.get(name)
        mapping = governor.settings.tools.get(name)
        if seen is None and mapping is None:
            continue
        descriptor = seen or _placeholder(name, governed_facts(mapping, {}))
        governor.register_response_tool(descriptor)
        return name
    return f"fn.{function}"


def _placeholder(name: str, facts: ToolMapping) -> ToolDescriptor:
    return ToolDescriptor(
        name=name,
        description="",
        input_schema={"type": "object"},
        source="litellm",
        action_type=facts.action_type,
        risk=facts.risk,
        reversible=facts.reversible,
        external_side_effect=facts.external_side_effect,
        idempotent=facts.idempotent,
    )


def judge(
    governor: ToolCallGovernor, function: str, arguments: str, principal: Principal, run_id: str
) -> Decision | str:
    """The firewall's decision for one proposed call, or why it cannot be judged at all."""
    if not _FUNCTION.fullmatch(function):
        return "invalid_tool_name"
    try:
        parsed = json.loads(arguments or "{}", object_pairs_hook=_once_each)
    except ValueError:
        return "invalid_arguments"
    if not isinstance(parsed, dict):
        return "invalid_arguments"
    name = _tool_name(governor, function)
    call = ToolCall("response", name, parsed, run_id, principal)
    return governor.response_firewall.decide(call)


def _once_each(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object; a key given twice is refused: one client keeps the first value, another
    the last, so what is judged might not be what runs."""
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key given twice")
    return dict(pairs)


def verdicts(
    governor: ToolCallGovernor,
    proposed: list[tuple[str, str]],
    principal: Principal,
    run_id: str,
) -> list[str | None]:
    """For each proposed `(function, arguments JSON)`: None when policy allows it, else the
    note that says it was withheld (and the withholding is audited on the run)."""
    notes: list[str | None] = []
    for name, arguments in proposed:
        try:
            verdict = judge(governor, name, arguments, principal, run_id)
        except GovernanceError as exc:  # fail closed: what cannot be judged is withheld
            verdict = f"unjudged: {exc}"
        if isinstance(verdict, Decision) and verdict.effect == "allow":
            notes.append(None)
            continue
        reason = verdict.reason if isinstance(verdict, Decision) else verdict
        effect = verdict.effect if isinstance(verdict, Decision) else "block"
        notes.append(note_for(name, effect, reason))
        audit_withheld(governor, run_id, name, effect, reason)
    return notes


def note_for(name: str, effect: str, reason: str) -> str:
    return (
        f"[proctor] the call to {name} was withheld ({effect}: {reason}); "
        "it was not returned to be executed"
    )


class UnrecognisedToolCall(Exception):
    """A response carries something call-like in a shape Proctor has no reader for: the whole
    response is withheld (fail closed)."""

    def __init__(self, where: str) -> None:
        super().__init__(f"a tool call Proctor does not recognise at {where}")
        self.where = where

    def detail(self) -> dict[str, str]:
        return {
            "error": f"[proctor] the model's response carries a tool call in a shape Proctor "
            f"does not recognise ({self.where}); the response was withheld, nothing in it "
            "was returned to be executed",
            "code": "proctor_unrecognised_tool_call",
            "status": "blocked",
        }

    def audit(self, governor: ToolCallGovernor, run_id: str) -> None:
        audit_withheld(governor, run_id, self.where, "block", "unrecognised_tool_call")


def audit_withheld(
    governor: ToolCallGovernor, run_id: str, tool: str, effect: str, reason: str
) -> None:
    data = {"stage": "model_response", "tool": tool, "effect": effect, "reason": reason}
    try:
        governor.gateway.firewall.record_run_event(run_id, "guardrail.rejected", data)
    except GovernanceError:
        pass  # withheld either way: the safe direction
