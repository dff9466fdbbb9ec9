"""Tool calls in a model's chat completion: LiteLLM does not execute them, its client does, so
a call that policy would not allow is taken out of the response before the client sees it.

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
from typing import TYPE_CHECKING, Any

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
        parsed = json.loads(arguments or "{}")
    except ValueError:
        return "invalid_arguments"
    if not isinstance(parsed, dict):
        return "invalid_arguments"
    name = _tool_name(governor, function)
    call = ToolCall("response", name, parsed, run_id, principal)
    return governor.response_firewall.decide(call)


def withhold_disallowed(
    governor: ToolCallGovernor, response: Any, principal: Principal, run_id: str
) -> list[str]:
    """Take every tool call policy does not allow out of `response` (in place), say so in the
    message text, and audit it; the names withheld."""
    withheld: list[str] = []
    for choice in getattr(response, "choices", None) or []:
        message = getattr(choice, "message", None)
        calls = getattr(message, "tool_calls", None)
        if message is None or not calls:
            continue
        kept, notes = [], []
        for tool_call in calls:
            function = getattr(tool_call, "function", None)
            name = str(getattr(function, "name", "") or "")
            arguments = str(getattr(function, "arguments", "") or "")
            try:
                verdict = judge(governor, name, arguments, principal, run_id)
            except GovernanceError as exc:  # fail closed: what cannot be judged is withheld
                verdict = f"unjudged: {exc}"
            if isinstance(verdict, Decision) and verdict.effect == "allow":
                kept.append(tool_call)
                continue
            reason = verdict.reason if isinstance(verdict, Decision) else verdict
            effect = verdict.effect if isinstance(verdict, Decision) else "block"
            withheld.append(name)
            notes.append(
                f"[proctor] the call to {name} was withheld ({effect}: {reason}); "
                "it was not returned to be executed"
            )
            _audit(governor, run_id, name, effect, reason)
        if notes:
            message.tool_calls = kept or None
            text = getattr(message, "content", None) or ""
            message.content = "\n".join([text, *notes]).strip()
            if not kept and getattr(choice, "finish_reason", None) == "tool_calls":
                choice.finish_reason = "stop"
    return withheld


def _audit(governor: ToolCallGovernor, run_id: str, tool: str, effect: str, reason: str) -> None:
    data = {"stage": "model_response", "tool": tool, "effect": effect, "reason": reason}
    try:
        governor.gateway.firewall.record_run_event(run_id, "guardrail.rejected", data)
    except GovernanceError:
        pass  # withheld either way: the safe direction
