"""Tool calls in a model's response, in every shape LiteLLM 1.110 hands its post-call hook:
the client runs them, so a call policy does not allow is taken out before the client sees it.

- a chat completion (`/chat/completions`): `choices[].message.tool_calls` and the legacy
  `choices[].message.function_call`;
- a Responses API response (`/v1/responses`): `output[]` items of type `function_call` and
  `custom_tool_call` are judged; the provider's own tools (`web_search_call`,
  `file_search_call`, `code_interpreter_call`, `image_generation_call`, `mcp_list_tools`)
  stay; any other call-like item (`computer_call`, `local_shell_call`, `mcp_call`,
  `mcp_approval_request`, ...) is withheld: Proctor cannot judge it;
- an Anthropic message (`/v1/messages`): `content[]` blocks of type `tool_use` are judged;
  other call-like blocks (`server_tool_use`, `mcp_tool_use`, ...) are withheld.
Each is read from LiteLLM's objects or from parsed JSON (pass-through routes). Anything
call-like left anywhere else in the response (another provider's native shape, a field a
later LiteLLM adds) withholds the whole response: `UnrecognisedToolCall`, audited.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from governance.core._contracts import Principal
from governance.litellm._response_calls import (
    UnrecognisedToolCall,
    audit_withheld,
    note_for,
    verdicts,
)
from governance.litellm._tool_like import first_tool_like, get, is_call_type, put

if TYPE_CHECKING:
    from governance.litellm._governor import ToolCallGovernor

PROVIDER_RUN: Final = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_list_tools",
    }
)
JUDGED_ITEMS: Final = frozenset({"function_call", "custom_tool_call"})


def call_of(function: Any) -> tuple[str, str]:
    """`(name, arguments JSON)` of an OpenAI function (a tool call's or the legacy field)."""
    return str(get(function, "name") or ""), str(get(function, "arguments") or "")


def item_call(item: Any) -> tuple[str, str]:
    """`(name, arguments JSON)` of a Responses output item or an Anthropic tool_use block."""
    kind = get(item, "type")
    name = str(get(item, "name") or "")
    if kind == "function_call":
        return name, str(get(item, "arguments") or "")
    if kind == "custom_tool_call":
        return name, json.dumps({"input": get(item, "input")})
    given = get(item, "input")
    try:
        return name, json.dumps(given if given is not None else {})
    except (TypeError, ValueError):
        return name, "not JSON"


class Judged:
    """The calls of one response, judged in one batch, and the notes for those withheld."""

    def __init__(self, governor: ToolCallGovernor, principal: Principal, run_id: str) -> None:
        self.governor, self.principal, self.run_id = governor, principal, run_id
        self.vetted: set[int] = set()
        self.withheld: list[str] = []

    def keep(self, proposed: list[tuple[str, str]]) -> list[str | None]:
        notes = verdicts(self.governor, proposed, self.principal, self.run_id)
        self.withheld.extend(name for (name, _), note in zip(proposed, notes, strict=True) if note)
        return notes

    def unjudgeable(self, kind: str) -> str:
        audit_withheld(self.governor, self.run_id, kind, "block", "unrecognised_tool_call")
        self.withheld.append(kind)
        return note_for(kind, "block", "Proctor cannot judge this kind of call")


def withhold_disallowed(
    governor: ToolCallGovernor, response: Any, principal: Principal, run_id: str
) -> list[str]:
    """Take every tool call policy does not allow out of `response` (in place), say so in its
    text, audit it; the names withheld. Raises UnrecognisedToolCall (audited) when a call-like
    thing is left that no reader here knows: the caller withholds the whole response."""
    judged = Judged(governor, principal, run_id)
    withhold_in_chat(judged, response)
    withhold_in_output(judged, response)
    withhold_in_message(judged, response)
    found = first_tool_like(response, frozenset(judged.vetted))
    if found is not None:
        unknown = UnrecognisedToolCall(found)
        unknown.audit(governor, run_id)
        raise unknown
    return judged.withheld


def withhold_in_chat(judged: Judged, response: Any) -> None:
    for choice in get(response, "choices") or []:
        message = get(choice, "message")
        if message is None:
            continue
        calls = list(get(message, "tool_calls") or [])
        legacy = get(message, "function_call")
        proposed = [call_of(get(call, "function")) for call in calls]
        if legacy:
            proposed.append(call_of(legacy))
        if not proposed:
            continue
        notes = judged.keep(proposed)
        kept = [call for call, note in zip(calls, notes, strict=False) if note is None]
        judged.vetted.update(id(call) for call in kept)
        if calls:
            put(message, "tool_calls", kept or None)
        legacy_kept = bool(legacy) and notes[-1] is None
        if legacy and legacy_kept:
            judged.vetted.add(id(legacy))
        elif legacy:
            put(message, "function_call", None)
        said = [note for note in notes if note]
        if said:
            text = get(message, "content") or ""
            put(message, "content", "\n".join([text, *said]).strip())
        if get(choice, "finish_reason") in ("tool_calls", "function_call") and not (
            kept or legacy_kept
        ):
            put(choice, "finish_reason", "stop")


def withhold_in_output(judged: Judged, response: Any) -> None:
    output = get(response, "output")
    if not isinstance(output, list) or not output:
        return
    kept: list[Any] = []
    said: list[str] = []
    judgeable = [item for item in output if get(item, "type") in JUDGED_ITEMS]
    notes = iter(judged.keep([item_call(item) for item in judgeable]))
    for item in output:
        kind = get(item, "type")
        if kind in JUDGED_ITEMS:
            note = next(notes)
            if note is None:
                judged.vetted.add(id(item))
                kept.append(item)
            else:
                said.append(note)
        elif kind in PROVIDER_RUN:
            judged.vetted.add(id(item))
            kept.append(item)
        elif is_call_type(kind):
            said.append(judged.unjudgeable(str(kind)))
        else:
            kept.append(item)
    if said:
        kept.append(_output_message("\n".join(said)))
        output[:] = kept


def _output_message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_proctor",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def withhold_in_message(judged: Judged, response: Any) -> None:
    content = get(response, "content")
    if get(response, "type") != "message" or not isinstance(content, list):
        return
    blocks = [block for block in content if get(block, "type") == "tool_use"]
    notes = iter(judged.keep([item_call(block) for block in blocks]))
    kept: list[Any] = []
    said: list[str] = []
    for block in content:
        kind = get(block, "type")
        if kind == "tool_use":
            note = next(notes)
            if note is None:
                judged.vetted.add(id(block))
                kept.append(block)
            else:
                said.append(note)
        elif is_call_type(kind):
            said.append(judged.unjudgeable(str(kind)))
        else:
            kept.append(block)
    if not said:
        return
    kept.append({"type": "text", "text": "\n".join(said)})
    content[:] = kept
    if get(response, "stop_reason") == "tool_use" and not any(
        get(block, "type") == "tool_use" for block in kept
    ):
        put(response, "stop_reason", "end_turn")
