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
        notes.append(
            f"[proctor] the call to {name} was withheld ({effect}: {reason}); "
            "it was not returned to be executed"
        )
        _audit(governor, run_id, name, effect, reason)
    return notes


def _function(tool_call: Any) -> tuple[str, str]:
    function = getattr(tool_call, "function", None)
    return (
        str(getattr(function, "name", "") or ""),
        str(getattr(function, "arguments", "") or ""),
    )


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
        proposed = [_function(call) for call in calls]
        notes = verdicts(governor, proposed, principal, run_id)
        if not any(notes):
            continue
        kept = [call for call, note in zip(calls, notes, strict=True) if note is None]
        withheld.extend(name for (name, _), note in zip(proposed, notes, strict=True) if note)
        message.tool_calls = kept or None
        text = getattr(message, "content", None) or ""
        message.content = "\n".join([text, *(note for note in notes if note)]).strip()
        if not kept and getattr(choice, "finish_reason", None) == "tool_calls":
            choice.finish_reason = "stop"
    return withheld


class StreamedCalls:
    """The tool calls of a streamed completion, assembled from their deltas. A chunk that
    carries a tool-call delta or a finish reason, and every chunk after it, is held back
    until the stream ends; then the held chunks go out without the withheld calls."""

    def __init__(self) -> None:
        self.held: list[Any] = []
        self._calls: dict[tuple[int, int], list[str]] = {}

    def hold(self, chunk: Any) -> bool:
        """True when `chunk` must wait (it is kept here); False to pass it on now."""
        choices = getattr(chunk, "choices", None) or []
        starts = any(
            getattr(getattr(c, "delta", None), "tool_calls", None)
            or getattr(c, "finish_reason", None)
            for c in choices
        )
        if not (starts or self.held):
            return False
        self.held.append(chunk)
        for c in choices:
            for delta in getattr(getattr(c, "delta", None), "tool_calls", None) or []:
                key = (int(getattr(c, "index", 0) or 0), int(getattr(delta, "index", 0) or 0))
                name, arguments = _function(delta)
                parts = self._calls.setdefault(key, ["", ""])
                parts[0] += name
                parts[1] += arguments
        return True

    def release(
        self, governor: ToolCallGovernor, principal: Principal, run_id: str
    ) -> list[Any]:
        """The held chunks, with every disallowed call taken out and the notes added."""
        keys = sorted(self._calls)
        notes = verdicts(
            governor, [(self._calls[k][0], self._calls[k][1]) for k in keys], principal, run_id
        )
        withheld = {key for key, note in zip(keys, notes, strict=True) if note}
        if not withheld:
            return self.held
        said: set[int] = set()
        for chunk in self.held:
            for c in getattr(chunk, "choices", None) or []:
                index = int(getattr(c, "index", 0) or 0)
                delta = getattr(c, "delta", None)
                deltas = getattr(delta, "tool_calls", None)
                if delta is not None and deltas:
                    left = [d for d in deltas if (index, int(d.index or 0)) not in withheld]
                    delta.tool_calls = left or None
                if delta is not None and index not in said:
                    mine = [n for k, n in zip(keys, notes, strict=True) if n and k[0] == index]
                    if mine:
                        delta.content = "\n".join([delta.content or "", *mine]).strip()
                        said.add(index)
                kept_any = any(k[0] == index and k not in withheld for k in keys)
                if getattr(c, "finish_reason", None) == "tool_calls" and not kept_any:
                    c.finish_reason = "stop"
        return self.held


def _audit(governor: ToolCallGovernor, run_id: str, tool: str, effect: str, reason: str) -> None:
    data = {"stage": "model_response", "tool": tool, "effect": effect, "reason": reason}
    try:
        governor.gateway.firewall.record_run_event(run_id, "guardrail.rejected", data)
    except GovernanceError:
        pass  # withheld either way: the safe direction
