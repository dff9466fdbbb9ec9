"""The replay provider: a scripted, deterministic policy of the transcript.

It is a pure function of the message list: the position in the script is recovered from the
assistant turns already in the transcript, and each branch is resolved from the outcome of the
tool results that preceded it. It never looks at the user's words, only at tool results, so a
scenario tests the governance workflow rather than keyword matching. Running out of script is
an error, never a silent stop.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness._errors import ProviderError
from harness.providers._base import (
    Message,
    ModelTurn,
    ProposedCall,
    ProviderIdentity,
    ToolSpec,
    Usage,
)

CallOutcome = Literal["executed", "blocked", "held", "failed"]
OUTCOMES: tuple[CallOutcome, ...] = ("executed", "blocked", "held", "failed")

_QUOTE = re.compile(r"\{\{\s*tool:([A-Za-z0-9_.-]+?)(?:#([A-Za-z0-9_.\[\]-]+))?\s*\}\}")


class ScriptedCall(BaseModel):
    """One proposed call. `raw_args` sends arguments verbatim (to script malformed JSON)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str = Field(description="The tool name the model proposes (it may not exist).")
    args: dict[str, Any] = Field(default_factory=dict, description="Arguments, as JSON.")
    raw_args: str | None = Field(
        default=None, description="Raw argument text sent instead of `args` (may be malformed)."
    )
    hallucinated: bool = Field(
        default=False,
        description="The tool is deliberately not registered: the contract check lets it pass.",
    )


class ScriptedUsage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(default=0, ge=0)


class ScriptedTurn(BaseModel):
    """What the model says in one turn: tool calls, a final answer, or both."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    calls: list[ScriptedCall] = Field(default_factory=list)
    answer: str | None = Field(
        default=None,
        description="Closing text. `{{tool:NAME}}` quotes the last result of NAME; "
        "`{{tool:NAME#field.sub}}` one field of it (results are JSON).",
    )
    usage: ScriptedUsage | None = Field(
        default=None, description="Token usage this turn reports (default: a fixed small count)."
    )
    provider_error: (
        Literal["rate_limited", "server_error", "timeout", "connection", "bad_request", "auth"]
        | None
    ) = Field(default=None, description="This turn fails like a vendor would, with this kind.")

    @model_validator(mode="after")
    def _says_something(self) -> ScriptedTurn:
        if self.provider_error is not None:
            if self.calls or self.answer is not None:
                raise ValueError("a `provider_error` turn has no `calls` or `answer`")
            return self
        if not self.calls and self.answer is None:
            raise ValueError("a turn needs `calls`, an `answer` or a `provider_error`")
        return self


class ScriptedBranch(BaseModel):
    """Chooses what comes next from the outcome of the previous turn's last call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    branch: dict[CallOutcome, list[ScriptStep]] = Field(
        description="Steps per outcome (executed, blocked, held, failed) of the previous call."
    )
    otherwise: list[ScriptStep] | None = Field(
        default=None, description="Steps when no listed outcome applies (default: an error)."
    )


ScriptStep = ScriptedTurn | ScriptedBranch
ScriptedBranch.model_rebuild()

DEFAULT_USAGE = Usage(prompt_tokens=100, completion_tokens=20)


def tool_result_status(content: str) -> CallOutcome | None:
    """The outcome recorded in a tool message (the loop writes them as JSON objects)."""
    try:
        payload = json.loads(content)
    except (TypeError, ValueError, RecursionError):
        return None
    status = payload.get("status") if isinstance(payload, dict) else None
    return status if status in OUTCOMES else None


class ReplayProvider:
    """Replays `script` against whatever the firewall decided. Deterministic, offline."""

    def __init__(self, script: Sequence[ScriptStep], *, name: str = "replay") -> None:
        self._script = list(script)
        self._identity = ProviderIdentity(name=name, model="scripted", live=False)

    @property
    def identity(self) -> ProviderIdentity:
        return self._identity

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        turns_taken = 0
        outcome_before: list[CallOutcome | None] = []
        last_outcome: CallOutcome | None = None
        for message in messages:
            role = message.get("role")
            if role == "assistant":
                outcome_before.append(last_outcome)
                turns_taken += 1
            elif role == "tool":
                last_outcome = tool_result_status(str(message.get("content", "")))
        outcome_before.append(last_outcome)

        turn = self._turn_at(turns_taken, outcome_before)
        return self._render(turn, turns_taken, messages)

    def _turn_at(self, index: int, outcomes: list[CallOutcome | None]) -> ScriptedTurn:
        """The index-th turn of the script, resolving branches with the outcome before each."""
        pending: list[ScriptStep] = list(self._script)
        produced = 0
        while pending:
            step = pending.pop(0)
            if isinstance(step, ScriptedBranch):
                outcome = outcomes[produced]
                chosen = step.branch.get(outcome) if outcome is not None else None
                if chosen is None:
                    chosen = step.otherwise
                if chosen is None:
                    raise ProviderError(
                        "script_exhausted",
                        f"turn {produced + 1}: the script has no branch for outcome "
                        f"{outcome or 'none'!r} (it lists {sorted(step.branch)}); add it or "
                        "an `otherwise`",
                    )
                pending[:0] = chosen
                continue
            if produced == index:
                return step
            produced += 1
        raise ProviderError(
            "script_exhausted",
            f"the script has {produced} turn(s) on this path and the run asked for turn "
            f"{index + 1}: add a turn (an `answer` ends the run)",
        )

    def _render(self, turn: ScriptedTurn, index: int, messages: Sequence[Message]) -> ModelTurn:
        if turn.provider_error is not None:
            raise ProviderError(turn.provider_error, f"scripted failure at turn {index + 1}")
        calls = tuple(
            ProposedCall(
                id=f"call_{index + 1}_{n + 1}",
                name=call.tool,
                arguments=call.raw_args
                if call.raw_args is not None
                else json.dumps(call.args, sort_keys=True, ensure_ascii=False),
            )
            for n, call in enumerate(turn.calls)
        )
        usage = (
            Usage(turn.usage.prompt_tokens, turn.usage.completion_tokens)
            if turn.usage
            else DEFAULT_USAGE
        )
        text = _quote_results(turn.answer, messages) if turn.answer is not None else None
        return ModelTurn(
            text=text,
            tool_calls=calls,
            usage=usage,
            finish_reason="tool_calls" if calls else "stop",
        )


def _quote_results(template: str, messages: Sequence[Message]) -> str:
    """Fill `{{tool:NAME}}` / `{{tool:NAME#path}}` from the latest result of each tool."""
    latest: dict[str, Any] = {}
    names_by_id: dict[str, str] = {}
    for message in messages:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or ():
                names_by_id[call["id"]] = call["function"]["name"]
        elif message.get("role") == "tool":
            name = names_by_id.get(str(message.get("tool_call_id")))
            if name is not None:
                latest[name] = _tool_payload(str(message.get("content", "")))

    def fill(match: re.Match[str]) -> str:
        name, path = match.group(1), match.group(2)
        if name not in latest:
            return f"[no result from {name}]"
        value = latest[name]
        if path:
            value = _dig(value, path)
        return value if isinstance(value, str) else json.dumps(value, sort_keys=True)

    return _QUOTE.sub(fill, template)


def _tool_payload(content: str) -> Any:
    try:
        payload = json.loads(content)
    except (ValueError, RecursionError):  # a tool's output nested too deep reads as text
        return content
    if isinstance(payload, dict) and payload.get("status") == "executed":
        output = payload.get("output")
        try:
            return json.loads(output) if isinstance(output, str) else output
        except (ValueError, RecursionError):
            return output
    return payload


def _dig(value: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return f"[no field {path}]"
    return value
