"""Tool calls in every stream shape LiteLLM hands the streaming iterator hook: chat chunks
(the legacy `function_call` delta too), Responses API events, and `/v1/messages` raw SSE
frames cut anywhere. Shapes are the wire JSON (dicts) and plain objects."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from governance.core._contracts import Principal
from governance.litellm import ToolCallGovernor
from governance.litellm._response_calls import UnrecognisedToolCall
from governance.litellm._streamed_calls import StreamedCalls

ANN = Principal("ann", "key-ann", "support")


def rejected(governor: ToolCallGovernor, run_id: str) -> list[dict[str, object]]:
    """The `guardrail.rejected` records of a run: what was withheld, audited."""
    return [
        dict(event.data)
        for event in governor.gateway.audit.events(run_id)
        if event.kind == "guardrail.rejected"
    ]


def _legacy(name: str | None, arguments: str, finish: str | None = None) -> Any:
    call = SimpleNamespace(name=name, arguments=arguments)
    delta = SimpleNamespace(content=None, tool_calls=None, function_call=call)
    return SimpleNamespace(choices=[SimpleNamespace(index=0, delta=delta, finish_reason=finish)])


def test_a_streamed_legacy_function_call_is_withheld(lookup_only: ToolCallGovernor) -> None:
    streamed = StreamedCalls()
    chunks = [_legacy("delete_everything", ""), _legacy(None, "{}")]
    end = SimpleNamespace(
        choices=[
            SimpleNamespace(
                index=0, delta=SimpleNamespace(content=None), finish_reason="function_call"
            )
        ]
    )
    assert all(streamed.feed(chunk) == [] for chunk in [*chunks, end])
    released = streamed.release(lookup_only, ANN, "s-legacy")
    assert all(c.choices[0].delta.function_call is None for c in released[:2])
    text = "".join(c.choices[0].delta.content or "" for c in released)
    assert "the call to delete_everything was withheld" in text
    assert released[-1].choices[0].finish_reason == "stop"
    assert [r["tool"] for r in rejected(lookup_only, "s-legacy")] == ["delete_everything"]


def _event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


def _responses_stream(name: str) -> list[dict[str, Any]]:
    item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": name,
        "arguments": "",
    }
    done = {**item, "arguments": "{}", "status": "completed"}
    return [
        _event("response.created", response={"id": "r", "output": []}),
        _event("response.output_item.added", output_index=0, item=item),
        _event("response.function_call_arguments.delta", item_id="fc_1", delta="{}"),
        _event("response.function_call_arguments.done", item_id="fc_1", arguments="{}"),
        _event("response.output_item.done", output_index=0, item=done),
        _event("response.completed", response={"id": "r", "output": [dict(done)]}),
    ]


def test_a_streamed_responses_api_call_is_withheld_from_every_event(
    lookup_only: ToolCallGovernor,
) -> None:
    streamed = StreamedCalls()
    events = _responses_stream("delete_everything")
    assert streamed.feed(events[0]) == [events[0]]  # nothing call-like yet: out at once
    assert all(streamed.feed(event) == [] for event in events[1:])
    released = streamed.release(lookup_only, ANN, "s-responses")
    assert '"name": "delete_everything"' not in json.dumps(released)
    assert not [e for e in released if "function_call" in e["type"]]
    final = released[-1]["response"]["output"]
    assert [item["type"] for item in final] == ["message"]
    assert "the call to delete_everything was withheld" in final[0]["content"][0]["text"]


def test_an_allowed_streamed_responses_api_call_goes_out_whole(
    lookup_only: ToolCallGovernor,
) -> None:
    streamed = StreamedCalls()
    events = _responses_stream("lookup")
    for event in events:
        streamed.feed(event)
    released = streamed.release(lookup_only, ANN, "s-responses-ok")
    assert released == events[1:]


def _sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _messages_stream(tool: str) -> bytes:
    start = {"type": "message_start", "message": {"id": "m", "type": "message", "content": []}}
    text = {"type": "text", "text": ""}
    use = {"type": "tool_use", "id": "tu_1", "name": tool, "input": {}}
    return b"".join(
        [
            _sse("message_start", start),
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": text},
            ),
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "On it."},
                },
            ),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": 1, "content_block": use},
            ),
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": '{"q": 1}'},
                },
            ),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 1}),
            _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
            _sse("message_stop", {"type": "message_stop"}),
        ]
    )


def _events(pieces: list[Any]) -> list[dict[str, Any]]:
    text = b"".join(pieces).decode()
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


@pytest.mark.parametrize("cut", [1, 7, 64])
def test_a_messages_stream_cut_anywhere_loses_its_withheld_tool_use(
    lookup_only: ToolCallGovernor, cut: int
) -> None:
    raw = _messages_stream("delete_everything")
    streamed = StreamedCalls()
    sent: list[Any] = []
    for at in range(0, len(raw), cut):
        sent.extend(streamed.feed(raw[at : at + cut]))
    assert b"tool_use" not in b"".join(sent)  # the text went out before the call began
    assert "On it." in json.dumps(_events(sent))
    sent.extend(streamed.release(lookup_only, ANN, f"s-sse-{cut}"))
    events = _events(sent)
    assert '"name": "delete_everything"' not in json.dumps(events)
    assert not [e for e in events if (e.get("delta") or {}).get("type") == "input_json_delta"]
    blocks = [e for e in events if e["type"] == "content_block_start"]
    assert [b["index"] for b in blocks] == [0, 1]  # renumbered: no gap for the client
    notes = [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"]
    assert "the call to delete_everything was withheld" in notes[-1]
    stop = [e for e in events if e["type"] == "message_delta"][0]
    assert stop["delta"]["stop_reason"] == "end_turn"


def test_an_allowed_messages_stream_tool_use_goes_out_unchanged(
    lookup_only: ToolCallGovernor,
) -> None:
    raw = _messages_stream("lookup")
    streamed = StreamedCalls()
    sent = [*streamed.feed(raw[:50]), *streamed.feed(raw[50:])]
    sent.extend(streamed.release(lookup_only, ANN, "s-sse-ok"))
    assert b"".join(sent) == raw


def test_a_stream_piece_in_no_known_shape_carrying_a_call_stops_the_stream() -> None:
    streamed = StreamedCalls()
    assert streamed.feed({"kind": "text", "text": "hi"}) == [{"kind": "text", "text": "hi"}]
    with pytest.raises(UnrecognisedToolCall):
        streamed.feed({"kind": "x", "parts": [{"functionCall": {"name": "rm", "args": {}}}]})


@pytest.mark.parametrize(
    "raw",
    [
        # Gemini's SSE (a pass-through route): no Anthropic blocks, a call all the same
        b'data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "rm"}}]}}]}\n\n',
        # a raw JSON stream that is not SSE at all
        b'{"output": {"message": {"content": [{"toolUse": {"name": "rm", "input": {}}}]}}}',
        # an Anthropic-looking event whose data cannot be read
        b'event: content_block_start\ndata: {"type": "content_block_start", "index": 0,\n\n',
    ],
)
def test_a_byte_stream_carrying_a_call_in_no_known_shape_never_releases_it(
    lookup_only: ToolCallGovernor, raw: bytes
) -> None:
    streamed = StreamedCalls()
    sent = [*streamed.feed(raw[:20]), *streamed.feed(raw[20:])]
    with pytest.raises(UnrecognisedToolCall):
        sent.extend(streamed.release(lookup_only, ANN, "s-raw"))
    assert b"rm" not in b"".join(sent)


def test_a_chat_chunk_hiding_a_call_outside_its_delta_never_goes_out(
    lookup_only: ToolCallGovernor,
) -> None:
    streamed = StreamedCalls()
    hidden = SimpleNamespace(
        choices=[SimpleNamespace(index=0, delta=SimpleNamespace(content="ok"), finish_reason=None)],
        provider_specific_fields={"tool_calls": [{"function": {"name": "rm"}}]},
    )
    assert streamed.feed(hidden) == []
    with pytest.raises(UnrecognisedToolCall):
        streamed.release(lookup_only, ANN, "s-hidden")
