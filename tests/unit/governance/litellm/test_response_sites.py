"""Tool calls in every non-streamed response shape LiteLLM hands the post-call hook (as parsed
JSON here: pass-through routes hand exactly that; LiteLLM's own objects are read the same way,
see tests/integration/litellm/test_response_objects.py)."""

from __future__ import annotations

from typing import Any

import pytest

from governance.core._contracts import Principal
from governance.litellm import ToolCallGovernor
from governance.litellm._response_calls import UnrecognisedToolCall
from governance.litellm._response_sites import withhold_disallowed

ANN = Principal("ann", "key-ann", "support")


def rejected(governor: ToolCallGovernor, run_id: str) -> list[dict[str, object]]:
    """The `guardrail.rejected` records of a run: what was withheld, audited."""
    return [
        dict(event.data)
        for event in governor.gateway.audit.events(run_id)
        if event.kind == "guardrail.rejected"
    ]


def _chat_legacy(name: str) -> dict[str, Any]:
    message = {
        "role": "assistant",
        "content": None,
        "function_call": {"name": name, "arguments": "{}"},
    }
    return {
        "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "function_call", "message": message}],
    }


def test_a_legacy_function_call_policy_does_not_allow_is_withheld_and_audited(
    lookup_only: ToolCallGovernor,
) -> None:
    response = _chat_legacy("delete_everything")
    assert withhold_disallowed(lookup_only, response, ANN, "r-legacy") == ["delete_everything"]
    choice = response["choices"][0]
    assert choice["message"]["function_call"] is None
    assert "the call to delete_everything was withheld" in choice["message"]["content"]
    assert choice["finish_reason"] == "stop"
    assert [r["tool"] for r in rejected(lookup_only, "r-legacy")] == ["delete_everything"]


def test_an_allowed_legacy_function_call_stays(lookup_only: ToolCallGovernor) -> None:
    response = _chat_legacy("lookup")
    assert withhold_disallowed(lookup_only, response, ANN, "r-legacy-ok") == []
    assert response["choices"][0]["message"]["function_call"]["name"] == "lookup"
    assert response["choices"][0]["finish_reason"] == "function_call"


def _responses(*items: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "output": list(items),
        # the request's tools, echoed back: definitions, not calls
        "tools": [{"type": "function", "name": "delete_everything"}],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
    }


def _function_call(name: str, n: int) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{n}",
        "call_id": f"call_{n}",
        "name": name,
        "arguments": "{}",
        "status": "completed",
    }


def test_responses_api_function_calls_are_judged_one_by_one(
    lookup_only: ToolCallGovernor,
) -> None:
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    response = _responses(
        _function_call("delete_everything", 1), _function_call("lookup", 2), search
    )
    withheld = withhold_disallowed(lookup_only, response, ANN, "r-responses")
    assert withheld == ["delete_everything"]
    kinds = [(item["type"], item.get("name")) for item in response["output"]]
    # the provider's own search stays; the note comes as a message item
    assert kinds == [("function_call", "lookup"), ("web_search_call", None), ("message", None)]
    note = response["output"][-1]["content"][0]["text"]
    assert "the call to delete_everything was withheld (block: unknown_tool)" in note


@pytest.mark.parametrize(
    "kind", ["computer_call", "local_shell_call", "mcp_approval_request", "shell_call"]
)
def test_responses_api_calls_proctor_cannot_judge_are_withheld(
    lookup_only: ToolCallGovernor, kind: str
) -> None:
    response = _responses({"type": kind, "id": "x_1", "call_id": "c", "action": {}})
    assert withhold_disallowed(lookup_only, response, ANN, f"r-{kind}") == [kind]
    assert [item["type"] for item in response["output"]] == ["message"]
    assert rejected(lookup_only, f"r-{kind}")[0]["reason"] == "unrecognised_tool_call"


def _message(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": list(blocks),
        "stop_reason": "tool_use",
    }


def test_anthropic_tool_use_blocks_are_judged_and_the_turn_ends_when_none_is_left(
    lookup_only: ToolCallGovernor,
) -> None:
    response = _message(
        {"type": "text", "text": "Deleting."},
        {"type": "tool_use", "id": "tu_1", "name": "delete_everything", "input": {}},
    )
    assert withhold_disallowed(lookup_only, response, ANN, "r-msg") == ["delete_everything"]
    assert [b["type"] for b in response["content"]] == ["text", "text"]
    assert "the call to delete_everything was withheld" in response["content"][-1]["text"]
    assert response["stop_reason"] == "end_turn"
    assert [r["tool"] for r in rejected(lookup_only, "r-msg")] == ["delete_everything"]


def test_an_allowed_anthropic_tool_use_stays_with_its_input_judged(
    lookup_only: ToolCallGovernor,
) -> None:
    response = _message(
        {"type": "tool_use", "id": "tu_1", "name": "lookup", "input": {"q": "x"}},
        {"type": "server_tool_use", "id": "st_1", "name": "web_search", "input": {}},
    )
    assert withhold_disallowed(lookup_only, response, ANN, "r-msg-ok") == ["server_tool_use"]
    assert [b["type"] for b in response["content"]] == ["tool_use", "text"]
    assert response["stop_reason"] == "tool_use"


@pytest.mark.parametrize(
    "response",
    [
        # Gemini's native shape (a pass-through route)
        {"candidates": [{"content": {"parts": [{"functionCall": {"name": "rm", "args": {}}}]}}]},
        # Bedrock Converse
        {"output": {"message": {"content": [{"toolUse": {"name": "rm", "input": {}}}]}}},
        # a call-like field somewhere no reader looks
        {
            "choices": [
                {
                    "index": 0,
                    "message": {"content": "x"},
                    "extra": {"tool_calls": [{"function": {"name": "rm"}}]},
                }
            ]
        },
        # an item type no reader knows, nested
        {"result": {"steps": [{"type": "tool_call", "name": "rm"}]}},
    ],
)
def test_a_tool_call_in_an_unrecognised_shape_withholds_the_whole_response(
    lookup_only: ToolCallGovernor, response: dict[str, Any]
) -> None:
    with pytest.raises(UnrecognisedToolCall) as raised:
        withhold_disallowed(lookup_only, response, ANN, "r-unknown")
    assert raised.value.detail()["code"] == "proctor_unrecognised_tool_call"
    assert rejected(lookup_only, "r-unknown")[0]["reason"] == "unrecognised_tool_call"


def test_responses_without_tool_calls_pass_untouched(lookup_only: ToolCallGovernor) -> None:
    plain = [
        {"object": "chat.completion", "choices": [{"message": {"content": "hi"}}]},
        _responses({"type": "message", "id": "m", "content": [{"type": "output_text"}]}),
        _message({"type": "text", "text": "hi"}),
        {"object": "list", "data": [{"embedding": [0.1]}]},
    ]
    for response in plain:
        before = repr(response)
        assert withhold_disallowed(lookup_only, response, ANN, "r-plain") == []
        assert repr(response) == before
