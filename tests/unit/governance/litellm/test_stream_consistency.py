"""A stream is released only when what its client will assemble is exactly what was judged:
`/v1/messages` blocks (each index started once, pieces only for open blocks, an input given
whole or in pieces, not both), Responses API per-item events (the same name, call id and
arguments as the judged final item; one id per item) and chat tool-call deltas (one id and
name per index, only arguments in pieces). Anything else fails closed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from governance.core._contracts import Principal
from governance.litellm import ToolCallGovernor, settings_from
from governance.litellm._response_calls import UnrecognisedToolCall
from governance.litellm._streamed_calls import StreamedCalls

ANN = Principal("ann", "key-ann", "support")
NOTES_POLICY = """\
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - {id: read, effect: allow, match: {tool: fn.read}}
  - id: no-secrets
    effect: block
    match: {tool: fn.read}
    when:
      - {arg: path, path_prefix: secrets/}
"""
READ = {"action_type": "read", "risk": "low", "reversible": True, "external_side_effect": False}
SAFE, SECRET = '{"path": "notes/a.txt"}', '{"path": "secrets/keys.txt"}'


@pytest.fixture
def notes_only(tmp_path: Path) -> Iterator[ToolCallGovernor]:
    policy = tmp_path / "notes-policy.yaml"
    policy.write_text(NOTES_POLICY, encoding="utf-8")
    settings = settings_from(
        {
            "proctor_policy": str(policy),
            "proctor_state_dir": str(tmp_path / "state"),
            "proctor_tools": {"fn.read": READ},
        },
        {},
    )
    made = ToolCallGovernor(settings)
    yield made
    made.close()


def _release(governor: ToolCallGovernor, pieces: list[Any]) -> list[Any]:
    streamed = StreamedCalls()
    out: list[Any] = []
    for piece in pieces:
        out.extend(streamed.feed(piece))
    out.extend(streamed.release(governor, ANN, "consistency"))
    return out


# -- /v1/messages ----------------------------------------------------------------------------


def _sse(name: str, **data: Any) -> bytes:
    return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()


def _start(index: int, block: dict[str, Any]) -> bytes:
    return _sse("content_block_start", index=index, content_block=block)


def _json(index: int, part: str) -> bytes:
    return _sse(
        "content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": part}
    )


def _stop(index: int) -> bytes:
    return _sse("content_block_stop", index=index)


def _use(tool: str = "read", given: Any = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": "tu_1", "name": tool, "input": {} if given is None else given}


MESSAGE = _sse("message_start", message={"id": "m", "type": "message", "content": []})
END = [_sse("message_delta", delta={"stop_reason": "tool_use"}), _sse("message_stop")]
TEXT = {"type": "text", "text": ""}


def test_a_messages_stream_allowed_call_with_its_input_in_the_start_goes_out_unchanged(
    notes_only: ToolCallGovernor,
) -> None:
    pieces = [MESSAGE, _start(0, _use(given=json.loads(SAFE))), _stop(0), *END]
    assert _release(notes_only, pieces) == pieces


def test_a_messages_stream_input_given_in_the_start_is_what_is_judged(
    notes_only: ToolCallGovernor,
) -> None:
    out = b"".join(
        _release(notes_only, [MESSAGE, _start(0, _use(given=json.loads(SECRET))), _stop(0), *END])
    )
    assert b"secrets/keys.txt" not in out
    assert b'"tool_use"' not in out
    assert b"the call to read was withheld" in out


@pytest.mark.parametrize(
    "pieces",
    [
        # a second block at the index of a tool_use: the tool_use would go out unjudged
        [_start(0, _use(given=json.loads(SECRET))), _stop(0), _start(0, TEXT), _stop(0)],
        [_start(0, _use()), _json(0, SECRET), _stop(0), _start(0, _use("other")), _stop(0)],
        # pieces for a block that is not open
        [_start(0, _use()), _json(0, SAFE), _stop(0), _json(0, "")],
        [_start(0, _use()), _json(1, SECRET), _stop(0)],
        [_start(0, _use()), _json(0, SAFE), _stop(0), _stop(0)],
        # an input given whole and again in pieces: clients disagree on which one runs
        [_start(0, _use(given=json.loads(SAFE))), _json(0, SECRET), _stop(0)],
        # a tool_use piece that is not input JSON
        [
            _start(0, _use()),
            _sse("content_block_delta", index=0, delta={"type": "text_delta", "text": SECRET}),
            _stop(0),
        ],
    ],
    ids=[
        "text-over-call",
        "call-over-call",
        "after-stop",
        "never-started",
        "stopped-twice",
        "input-twice",
        "odd-delta",
    ],
)
def test_a_messages_stream_whose_blocks_do_not_add_up_fails_closed(
    notes_only: ToolCallGovernor, pieces: list[bytes]
) -> None:
    with pytest.raises(UnrecognisedToolCall):
        _release(notes_only, [MESSAGE, *pieces, *END])


def test_a_text_block_already_sent_cannot_be_restarted_as_a_call(
    notes_only: ToolCallGovernor,
) -> None:
    streamed = StreamedCalls()
    assert streamed.feed(MESSAGE + _start(0, TEXT) + _stop(0))  # plain text: out at once
    for piece in [_start(0, _use()), _json(0, SAFE), _stop(0), *END]:
        streamed.feed(piece)
    with pytest.raises(UnrecognisedToolCall):
        streamed.release(notes_only, ANN, "consistency")


# -- Responses API ---------------------------------------------------------------------------


def _call(item_id: str, arguments: str, call_id: str = "c1", name: str = "read") -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def _ev(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": f"response.{kind}", **fields}


def _item_events(item: dict[str, Any], index: int) -> list[dict[str, Any]]:
    return [
        _ev("output_item.added", output_index=index, item={**item, "arguments": ""}),
        _ev(
            "function_call_arguments.delta",
            output_index=index,
            item_id=item["id"],
            delta=item["arguments"],
        ),
        _ev(
            "function_call_arguments.done",
            output_index=index,
            item_id=item["id"],
            arguments=item["arguments"],
        ),
        _ev("output_item.done", output_index=index, item=item),
    ]


def _final(*items: dict[str, Any]) -> dict[str, Any]:
    return _ev("completed", response={"id": "r", "output": [dict(i) for i in items]})


def test_an_allowed_responses_stream_goes_out_unchanged(notes_only: ToolCallGovernor) -> None:
    events = [*_item_events(_call("fc_1", SAFE), 0), _final(_call("fc_1", SAFE))]
    assert _release(notes_only, events) == events


def test_a_withheld_responses_call_loses_every_event_of_its_id(
    notes_only: ToolCallGovernor,
) -> None:
    safe, secret = _call("fc_1", SAFE), _call("fc_2", SECRET, "c2")
    events = [*_item_events(safe, 0), *_item_events(secret, 1), _final(safe, secret)]
    out = json.dumps(_release(notes_only, events))
    assert "secrets/keys.txt" not in out and "fc_2" not in out
    assert out.count('"fc_1"') == 5  # four events and the final item


def _tampered() -> dict[str, list[dict[str, Any]]]:
    safe, secret = _call("fc_1", SAFE), _call("fc_1", SECRET)
    base = _item_events(safe, 0)
    return {
        # two items with one id: the judged one and the one the client keeps may differ
        "duplicate-id": [*_item_events(secret, 1), _final(safe, secret)],
        # per-item events saying another call than the final item judged
        "done-item": [
            *base[:3],
            _ev("output_item.done", output_index=0, item=secret),
            _final(safe),
        ],
        "added-item": [
            _ev("output_item.added", output_index=0, item=secret),
            *base[1:],
            _final(safe),
        ],
        "other-name": [
            _ev(
                "output_item.added", output_index=0, item={**safe, "name": "write", "arguments": ""}
            ),
            *base[1:],
            _final(safe),
        ],
        "other-call-id": [
            *base[:3],
            _ev("output_item.done", output_index=0, item={**safe, "call_id": "c9"}),
            _final(safe),
        ],
        "args-done": [
            base[0],
            base[1],
            _ev("function_call_arguments.done", output_index=0, item_id="fc_1", arguments=SECRET),
            base[3],
            _final(safe),
        ],
        "deltas": [
            base[0],
            _ev("function_call_arguments.delta", output_index=0, item_id="fc_1", delta=SECRET),
            *base[2:],
            _final(safe),
        ],
        "extra-delta": [
            *base[:2],
            _ev("function_call_arguments.delta", output_index=0, item_id="fc_1", delta=" "),
            *base[2:],
            _final(safe),
        ],
        # an event for an item the final output does not have
        "unknown-id": [*base, *_item_events(_call("fc_9", SECRET, "c9"), 1), _final(safe)],
        # one output index for two items: a client finds items by index
        "shared-index": [
            *base,
            _ev("function_call_arguments.delta", output_index=0, item_id="msg_1", delta=SECRET),
            _final(safe, {"type": "message", "id": "msg_1", "role": "assistant", "content": []}),
        ],
    }


@pytest.mark.parametrize("case", sorted(_tampered()))
def test_a_responses_stream_whose_events_differ_from_the_judged_output_fails_closed(
    notes_only: ToolCallGovernor, case: str
) -> None:
    with pytest.raises(UnrecognisedToolCall):
        _release(notes_only, _tampered()[case])


# -- chat completion chunks ------------------------------------------------------------------


def _chunk(*calls: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    delta = {"role": "assistant", "content": None, "tool_calls": list(calls)}
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _piece(
    index: Any, arguments: str, call_id: str | None = None, name: str | None = None
) -> dict[str, Any]:
    return {
        "index": index,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def test_an_allowed_chat_call_in_pieces_goes_out_whole(notes_only: ToolCallGovernor) -> None:
    chunks = [
        _chunk(_piece(0, "", "call_1", "read")),
        _chunk(_piece(0, SAFE[:9], "call_1")),  # the same id again: every client agrees
        _chunk(_piece(0, SAFE[9:])),
        _chunk(finish="tool_calls"),
    ]
    assert _release(notes_only, chunks) == chunks


@pytest.mark.parametrize(
    "chunks",
    [
        # a second call at the same index: the OpenAI SDK merges it into the first
        [_chunk(_piece(0, SAFE, "call_1", "read")), _chunk(_piece(0, SECRET, "call_2", "read"))],
        # a name given again: joined by some clients, ignored by others
        [_chunk(_piece(0, "", "call_1", "re")), _chunk(_piece(0, SAFE, None, "ad"))],
        [_chunk(_piece(0, SAFE, "call_1", "read")), _chunk(_piece(0, "", None, "read"))],
        # no index: which call it continues is anyone's guess
        [_chunk(_piece(None, SAFE, "call_1", "read"))],
        [_chunk(_piece("0", SAFE, "call_1", "read"))],
        # arguments that are not text
        [
            _chunk(
                {
                    "index": 0,
                    "id": "call_1",
                    "function": {"name": "read", "arguments": {"path": "x"}},
                }
            )
        ],
    ],
    ids=["other-id", "split-name", "name-again", "no-index", "text-index", "dict-arguments"],
)
def test_chat_call_pieces_that_clients_assemble_differently_fail_closed(
    notes_only: ToolCallGovernor, chunks: list[dict[str, Any]]
) -> None:
    with pytest.raises(UnrecognisedToolCall):
        _release(notes_only, [*chunks, _chunk(finish="tool_calls")])


class _Kind(str, Enum):  # noqa: UP042 - as LiteLLM's: str() of it is not its value
    """LiteLLM hands Responses events over with enum types, not strings."""

    ADDED = "response.output_item.added"
    DELTA = "response.function_call_arguments.delta"
    DONE = "response.output_item.done"
    COMPLETED = "response.completed"


def _objects(added_arguments: str) -> list[SimpleNamespace]:
    item = _call("fc_1", SAFE)
    return [
        SimpleNamespace(
            type=_Kind.ADDED, output_index=0, item={**item, "arguments": added_arguments}
        ),
        SimpleNamespace(type=_Kind.DELTA, output_index=0, item_id="fc_1", delta=SAFE),
        SimpleNamespace(type=_Kind.DONE, output_index=0, item=item),
        SimpleNamespace(type=_Kind.COMPLETED, response={"id": "r", "output": [dict(item)]}),
    ]


def test_responses_events_typed_by_enum_are_checked_the_same(notes_only: ToolCallGovernor) -> None:
    events = _objects("")
    assert _release(notes_only, events) == events
    with pytest.raises(UnrecognisedToolCall):  # added whole, then the deltas again
        _release(notes_only, _objects(SAFE))


def test_responses_events_after_a_withheld_item_point_at_the_item_the_client_has(
    notes_only: ToolCallGovernor,
) -> None:
    secret, first, second = (
        _call("fc_1", SECRET, "c1"),
        _call("fc_2", SAFE, "c2"),
        _call("fc_3", '{"path": "notes/b.txt"}', "c3"),
    )
    events = [*_item_events(secret, 0), *_item_events(first, 1), *_item_events(second, 2)]
    out = _release(notes_only, [*events, _final(secret, first, second)])
    placed = {(e.get("item_id") or e["item"]["id"], e["output_index"]) for e in out[:-1]}
    assert placed == {("fc_2", 0), ("fc_3", 1)}  # as a client numbers them: no gap, no mix-up


def test_a_responses_event_for_an_item_never_added_fails_closed(
    notes_only: ToolCallGovernor,
) -> None:
    safe = _call("fc_1", SAFE)
    events = [*_item_events(safe, 0)[1:], _final(safe)]  # deltas and done, no `added`
    with pytest.raises(UnrecognisedToolCall):
        _release(notes_only, events)


@pytest.mark.parametrize(
    "arguments",
    [
        '{"path": "secrets/keys.txt", "path": "notes/a.txt"}',
        '{"path": "notes/a.txt", "opts": {"mode": "r", "mode": "w"}}',
    ],
)
def test_call_arguments_with_a_key_given_twice_are_withheld(
    notes_only: ToolCallGovernor, arguments: str
) -> None:
    chunks = [_chunk(_piece(0, arguments, "call_1", "read")), _chunk(finish="tool_calls")]
    out = json.dumps(_release(notes_only, chunks))
    assert "secrets/keys.txt" not in out and '"mode"' not in out
    assert "the call to read was withheld (block: invalid_arguments)" in out
