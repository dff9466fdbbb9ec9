"""Replies validate strictly as OpenAI objects, stream as SSE ending in [DONE], and reproduce."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from starlette.testclient import TestClient

from stubs.openai_stub import CREATED, create_app

AUTH = {"Authorization": "Bearer test"}
EMAIL = {
    "type": "function",
    "function": {
        "name": "email_send",
        "description": "Send an email to a recipient.",
        "parameters": {
            "type": "object",
            "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
            "required": ["to", "body"],
        },
    },
}
PROPOSE = [
    {"role": "user", "content": 'send an email to ann@example.com saying "the build is green"'}
]
SUMMARISE = [
    *PROPOSE,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "email_send", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "queued for delivery"},
]
NO_MATCH = [{"role": "user", "content": "what's the weather in Oslo?"}]
CONVERSATIONS = {"tool-call": PROPOSE, "summary": SUMMARISE, "cannot-help": NO_MATCH}


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app()) as c:
        yield c


def _post(client: TestClient, messages: list[Any], **extra: Any) -> Any:
    body = {"model": "proctor-stub-1", "messages": messages, "tools": [EMAIL], **extra}
    response = client.post("/v1/chat/completions", headers=AUTH, json=body)
    assert response.status_code == 200, response.text
    return response


def _events(response: Any) -> list[str]:
    assert response.headers["content-type"].startswith("text/event-stream")
    text: str = response.text
    assert text.endswith("\n\n")
    blocks = text.split("\n\n")[:-1]
    assert all(block.startswith("data: ") and "\n" not in block for block in blocks)
    return [block[len("data: ") :] for block in blocks]


def _chunks(response: Any) -> list[ChatCompletionChunk]:
    events = _events(response)
    assert events[-1] == "[DONE]"
    assert "[DONE]" not in events[:-1]
    return [ChatCompletionChunk.model_validate_json(e, strict=True) for e in events[:-1]]


@pytest.mark.parametrize("name", CONVERSATIONS)
def test_a_completion_validates_strictly_with_no_unknown_fields(
    client: TestClient, name: str
) -> None:
    completion = ChatCompletion.model_validate_json(
        _post(client, CONVERSATIONS[name]).content, strict=True
    )
    assert completion.model_extra == {}
    assert completion.choices[0].message.model_extra == {}
    assert completion.created == CREATED
    assert completion.usage is not None
    assert completion.usage.total_tokens == (
        completion.usage.prompt_tokens + completion.usage.completion_tokens
    )


@pytest.mark.parametrize("name", CONVERSATIONS)
def test_every_stream_chunk_validates_strictly_and_the_stream_ends_with_done(
    client: TestClient, name: str
) -> None:
    response = _post(
        client, CONVERSATIONS[name], stream=True, stream_options={"include_usage": True}
    )
    chunks = _chunks(response)
    assert all(chunk.model_extra == {} for chunk in chunks)
    assert len({chunk.id for chunk in chunks}) == 1
    *body, finish, usage_chunk = chunks
    assert body[0].choices[0].delta.role == "assistant"
    assert finish.choices[0].finish_reason is not None
    assert usage_chunk.choices == [] and usage_chunk.usage is not None


@pytest.mark.parametrize("name", CONVERSATIONS)
def test_a_stream_reassembles_into_the_non_streamed_reply(client: TestClient, name: str) -> None:
    whole = ChatCompletion.model_validate_json(_post(client, CONVERSATIONS[name]).content)
    chunks = _chunks(
        _post(client, CONVERSATIONS[name], stream=True, stream_options={"include_usage": True})
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
            call["id"] += delta.id or ""
            call["name"] += (delta.function.name or "") if delta.function else ""
            call["arguments"] += (delta.function.arguments or "") if delta.function else ""
    message = whole.choices[0].message
    assert text == (message.content or "")
    expected = [
        {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}  # type: ignore[union-attr]
        for c in message.tool_calls or []
    ]
    assert [calls[i] for i in sorted(calls)] == expected
    assert chunks[-2].choices[0].finish_reason == whole.choices[0].finish_reason
    assert chunks[-1].usage == whole.usage


def test_tool_call_arguments_arrive_in_several_deltas(client: TestClient) -> None:
    chunks = _chunks(_post(client, PROPOSE, stream=True))
    argument_deltas = [
        d for c in chunks for d in (c.choices[0].delta.tool_calls or []) if d.id is None
    ]
    assert len(argument_deltas) > 2
    header = next(d for c in chunks for d in (c.choices[0].delta.tool_calls or []) if d.id)
    assert header.type == "function" and header.function and header.function.arguments == ""


def test_without_include_usage_no_usage_chunk_is_streamed(client: TestClient) -> None:
    chunks = _chunks(_post(client, PROPOSE, stream=True))
    assert all(chunk.usage is None for chunk in chunks)
    assert all(chunk.choices for chunk in chunks)


@pytest.mark.parametrize("stream", [False, True])
def test_the_same_request_gets_byte_identical_bytes(client: TestClient, stream: bool) -> None:
    first = _post(client, PROPOSE, stream=stream).content
    assert _post(client, PROPOSE, stream=stream).content == first
    with TestClient(create_app()) as other:
        body = {"model": "proctor-stub-1", "messages": PROPOSE, "tools": [EMAIL], "stream": stream}
        assert other.post("/v1/chat/completions", headers=AUTH, json=body).content == first


def test_a_different_request_gets_a_different_id(client: TestClient) -> None:
    one = _post(client, PROPOSE).json()
    two = _post(client, NO_MATCH).json()
    assert one["id"] != two["id"]
    assert one["id"].startswith("chatcmpl-")
    assert one["choices"][0]["message"]["tool_calls"][0]["id"].startswith("call_")


def test_the_reply_echoes_the_requested_model(client: TestClient) -> None:
    body = {"model": "proctor-stub-1:missing-usage", "messages": NO_MATCH}
    response = client.post("/v1/chat/completions", headers=AUTH, json=body)
    assert response.json()["model"] == "proctor-stub-1:missing-usage"


def test_the_model_list_has_the_openai_list_shape(client: TestClient) -> None:
    listing = client.get("/v1/models", headers=AUTH).json()
    assert listing["object"] == "list"
    assert listing["data"][0] == {
        "id": "proctor-stub-1",
        "object": "model",
        "created": CREATED,
        "owned_by": "proctor",
    }


def test_one_model_can_be_fetched_and_an_unknown_one_is_a_404(client: TestClient) -> None:
    assert client.get("/v1/models/proctor-stub-1:slow", headers=AUTH).json()["id"] == (
        "proctor-stub-1:slow"
    )
    missing = client.get("/v1/models/gpt-4o", headers=AUTH)
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "model_not_found"


def test_extra_base_models_are_served_with_their_fault_variants() -> None:
    with TestClient(create_app(models=["alpha", "beta"])) as c:
        ids = [m["id"] for m in c.get("/v1/models", headers=AUTH).json()["data"]]
        body = {"model": "proctor-stub-1", "messages": NO_MATCH}
        assert c.post("/v1/chat/completions", headers=AUTH, json=body).status_code == 404
    assert ids[:2] == ["alpha", "beta"] and "beta:slow" in ids and "proctor-stub-1" not in ids


@pytest.mark.parametrize("models", [[], ["a:b"], [""], "proctor-stub-1"])
def test_a_bad_model_list_is_refused_at_creation(models: Any) -> None:
    with pytest.raises(ValueError):
        create_app(models=models)


def test_the_wire_bytes_are_compact_utf8_json(client: TestClient) -> None:
    messages = [{"role": "user", "content": 'email zoë@example.com saying "héllo"'}]
    raw = _post(client, messages).content
    compact = json.dumps(json.loads(raw), separators=(",", ":"), ensure_ascii=False)
    assert raw == compact.encode("utf-8")
    assert "zoë@example.com" in raw.decode("utf-8")
