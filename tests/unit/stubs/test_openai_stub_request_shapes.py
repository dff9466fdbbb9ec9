"""The stub accepts every message shape the real Chat Completions API accepts (the openai SDK's
`ChatCompletion*MessageParam` types: image, audio and file parts, echoed assistant fields,
custom cache breakpoints) and still rejects the shapes the API rejects."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from stubs.openai_stub import create_app

AUTH = {"Authorization": "Bearer test"}
IMAGE = {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}}
AUDIO = {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
FILE = {"type": "file", "file": {"file_data": "JVBERi0=", "filename": "a.pdf"}}
TEXT = {"type": "text", "text": "what is this?"}
CITE = {
    "type": "url_citation",
    "url_citation": {"url": "https://e.com", "title": "e", "start_index": 0, "end_index": 1},
}
CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def _user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


ACCEPTED: list[tuple[str, list[dict[str, Any]]]] = [
    ("image-part", [_user([TEXT, IMAGE])]),
    ("image-by-data-url", [_user([{"type": "image_url", "image_url": {"url": "data:,x"}}])]),
    ("audio-part", [_user([AUDIO])]),
    ("file-part-by-data", [_user([FILE])]),
    ("file-part-by-id", [_user([{"type": "file", "file": {"file_id": "file-1"}}])]),
    (
        "text-part-with-cache-breakpoint",
        [_user([{**TEXT, "prompt_cache_breakpoint": {"mode": "explicit", "ttl": "30m"}}])],
    ),
    ("developer-role", [{"role": "developer", "content": [TEXT]}, _user("hi")]),
    (
        "assistant-echoed-with-annotations-refusal-audio",
        [
            _user("hi"),
            {
                "role": "assistant",
                "content": "see e.com",
                "refusal": None,
                "annotations": [CITE],
                "audio": {"id": "audio_1"},
            },
            _user("and?"),
        ],
    ),
    (
        "assistant-with-deprecated-function-call",
        [_user("hi"), {"role": "assistant", "content": None, "function_call": {"name": "f",
                                                                               "arguments": "{}"}}],
    ),
    ("assistant-refusal-part", [_user("hi"), {"role": "assistant", "content": [
        {"type": "refusal", "refusal": "no"}]}, _user("ok")]),
    (
        "tool-message-with-text-parts",
        [_user("hi"), {"role": "assistant", "tool_calls": [CALL]},
         {"role": "tool", "tool_call_id": "c1", "content": [TEXT]}],
    ),
]  # fmt: skip

P0 = "messages[0].content[0]"
HELD = [_user("hi"), {"role": "assistant", "tool_calls": [CALL]}]
REJECTED: list[tuple[str, list[dict[str, Any]], str]] = [
    ("image-in-a-system-message", [{"role": "system", "content": [IMAGE]}], f"{P0}.type"),
    ("image-in-a-tool-message",
     [*HELD, {"role": "tool", "tool_call_id": "c1", "content": [IMAGE]}],
     "messages[2].content[0].type"),
    ("image-without-url", [_user([{"type": "image_url", "image_url": {"detail": "low"}}])],
     f"{P0}.image_url.url"),
    ("image-detail-unknown",
     [_user([{"type": "image_url", "image_url": {"url": "u", "detail": "max"}}])],
     f"{P0}.image_url.detail"),
    ("audio-format-unknown",
     [_user([{"type": "input_audio", "input_audio": {"data": "x", "format": "ogg"}}])],
     f"{P0}.input_audio.format"),
    ("audio-without-data", [_user([{"type": "input_audio", "input_audio": {"format": "wav"}}])],
     f"{P0}.input_audio.data"),
    ("file-with-neither-data-nor-id", [_user([{"type": "file", "file": {"filename": "a.pdf"}}])],
     f"{P0}.file.file_id"),
    ("unknown-key-in-an-image-part", [_user([{**IMAGE, "alt": "x"}])], f"{P0}.alt"),
    ("refusal-part-from-a-user", [_user([{"type": "refusal", "refusal": "no"}])], f"{P0}.type"),
    ("assistant-audio-without-id", [_user("hi"), {"role": "assistant", "audio": {}}],
     "messages[1].audio.id"),
    ("annotations-not-a-list",
     [_user("hi"), {"role": "assistant", "content": "x", "annotations": {}}],
     "messages[1].annotations"),
]  # fmt: skip


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app()) as c:
        yield c


def _post(client: TestClient, messages: list[dict[str, Any]]) -> Any:
    body = {"model": "proctor-stub-1", "messages": messages}
    return client.post("/v1/chat/completions", json=body, headers=AUTH)


@pytest.mark.parametrize("messages", [m for _, m in ACCEPTED], ids=[n for n, _ in ACCEPTED])
def test_a_request_shape_the_real_api_accepts_is_answered(
    client: TestClient, messages: list[dict[str, Any]]
) -> None:
    response = _post(client, messages)
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["role"] == "assistant"


@pytest.mark.parametrize(
    ("messages", "param"), [c[1:] for c in REJECTED], ids=[c[0] for c in REJECTED]
)
def test_a_request_shape_the_real_api_rejects_gets_a_400_naming_the_parameter(
    client: TestClient, messages: list[dict[str, Any]], param: str
) -> None:
    response = _post(client, messages)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == param


# Top-level parameters: the values the SDK's `CompletionCreateParams` types allow are answered,
# anything else is a 400 naming the parameter. Chat Completions has no top-level `reasoning`
# object (that is the Responses API's): the stub rejects it as the API does.
PARAMS_ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    *[(f"reasoning_effort-{v}", {"reasoning_effort": v})
      for v in ("none", "minimal", "low", "medium", "high", "xhigh", "max")],
    ("reasoning_effort-null", {"reasoning_effort": None}),
    ("verbosity-low", {"verbosity": "low"}),
    ("service_tier-flex", {"service_tier": "flex"}),
    ("prompt_cache_retention-24h", {"prompt_cache_retention": "24h"}),
]  # fmt: skip
PARAMS_REJECTED: list[tuple[str, dict[str, Any], str]] = [
    ("reasoning_effort-unknown", {"reasoning_effort": "extreme"}, "reasoning_effort"),
    ("reasoning_effort-wrong-case", {"reasoning_effort": "High"}, "reasoning_effort"),
    ("reasoning_effort-not-a-string", {"reasoning_effort": 3}, "reasoning_effort"),
    ("verbosity-unknown", {"verbosity": "max"}, "verbosity"),
    ("service_tier-unknown", {"service_tier": "cheap"}, "service_tier"),
    ("prompt_cache_retention-unknown", {"prompt_cache_retention": "1h"}, "prompt_cache_retention"),
    ("responses-api-reasoning-object", {"reasoning": {"effort": "low"}}, "reasoning"),
]  # fmt: skip


def _post_params(client: TestClient, params: dict[str, Any]) -> Any:
    body = {"model": "proctor-stub-1", "messages": [_user("hi")], **params}
    return client.post("/v1/chat/completions", json=body, headers=AUTH)


@pytest.mark.parametrize(
    "params", [p for _, p in PARAMS_ACCEPTED], ids=[n for n, _ in PARAMS_ACCEPTED]
)
def test_a_top_level_parameter_value_the_real_api_accepts_is_answered(
    client: TestClient, params: dict[str, Any]
) -> None:
    response = _post_params(client, params)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("params", "param"), [c[1:] for c in PARAMS_REJECTED], ids=[c[0] for c in PARAMS_REJECTED]
)
def test_a_top_level_parameter_value_the_real_api_rejects_gets_a_400_naming_it(
    client: TestClient, params: dict[str, Any], param: str
) -> None:
    response = _post_params(client, params)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == param
