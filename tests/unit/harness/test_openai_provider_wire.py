"""OpenAIProvider on the wire: the exact request body, and how replies become ModelTurns."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest
from pydantic import BaseModel, Field

from harness._errors import ProviderError
from harness.providers._base import ModelTurn, ProposedCall, Provider, ProviderIdentity, Usage
from harness.providers._openai import OpenAIProvider
from harness.providers._settings import ProviderSettings

KEY = "sk-test-SECRET-0123456789"
SETTINGS = ProviderSettings(base_url="http://vendor.test/v1", model="gpt-test", api_key=KEY)


class ReadArgs(BaseModel):
    path: str = Field(description="workspace-relative path")


READ_SCHEMA = ReadArgs.model_json_schema()
TOOLS = [
    {
        "type": "function",
        "function": {"name": "fs.read", "description": "Read a file.", "parameters": READ_SCHEMA},
    },
    {
        "type": "function",
        "function": {
            "name": "mcp.git.git_status",
            "description": "Status.",
            "parameters": {"type": "object", "properties": {}},
        },
    },
]
HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "You are careful."},
    {"role": "user", "content": "Read notes.md"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "fs.read", "arguments": '{"path": "notes.md"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
]


def completion(message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-test",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    body.update(extra)
    return body


class Vendor:
    """A scripted endpoint: answers in order and keeps every request it saw."""

    def __init__(self, *answers: httpx2.Response | Callable[[httpx2.Request], httpx2.Response]):
        self.answers = list(answers)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        return answer(request) if callable(answer) else answer

    def body(self, index: int = 0) -> Any:
        return json.loads(self.requests[index].content)


@pytest.fixture
def http() -> Iterator[Callable[[Vendor], httpx2.Client]]:
    clients: list[httpx2.Client] = []

    def make(vendor: Vendor) -> httpx2.Client:
        client = httpx2.Client(transport=httpx2.MockTransport(vendor))
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def complete_with(
    http: Callable[[Vendor], httpx2.Client], vendor: Vendor, messages: Any = None, tools: Any = None
) -> ModelTurn:
    provider = OpenAIProvider(SETTINGS, http_client=http(vendor), sleep=lambda _: None)
    return provider.complete(
        HISTORY if messages is None else messages, TOOLS if tools is None else tools
    )


def test_request_body_is_structured_with_encoded_names_and_sanitised_schemas(http: Any) -> None:
    vendor = Vendor(httpx2.Response(200, json=completion({"role": "assistant", "content": "ok"})))
    complete_with(http, vendor)
    request = vendor.requests[0]
    assert request.method == "POST"
    assert str(request.url) == "http://vendor.test/v1/chat/completions"
    assert vendor.body() == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "You are careful."},
            {"role": "user", "content": "Read notes.md"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "fs__read", "arguments": '{"path": "notes.md"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "fs__read",
                    "description": "Read a file.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "path": {
                                "description": "workspace-relative path",
                                "title": "Path",
                                "type": "string",
                            }
                        },
                        "required": ["path"],
                    },
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "mcp__git__git_status",
                    "description": "Status.",
                    "parameters": {"type": "object", "properties": {}},
                },
            },
        ],
    }
    assert "." not in json.dumps([t["function"]["name"] for t in vendor.body()["tools"]])


def test_no_tools_means_no_tools_key_rather_than_an_empty_list(http: Any) -> None:
    vendor = Vendor(httpx2.Response(200, json=completion({"role": "assistant", "content": "hi"})))
    complete_with(http, vendor, messages=[{"role": "user", "content": "hi"}], tools=[])
    assert "tools" not in vendor.body()


def test_the_callers_messages_and_tools_are_not_mutated(http: Any) -> None:
    messages, tools = copy.deepcopy(HISTORY), copy.deepcopy(TOOLS)
    vendor = Vendor(httpx2.Response(200, json=completion({"role": "assistant", "content": "ok"})))
    complete_with(http, vendor, messages=messages, tools=tools)
    assert messages == HISTORY
    assert tools == TOOLS


def test_key_goes_in_the_auth_header_and_openai_org_env_does_not_leak(
    http: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-private")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-private")
    vendor = Vendor(httpx2.Response(200, json=completion({"role": "assistant", "content": "ok"})))
    complete_with(http, vendor)
    headers = vendor.requests[0].headers
    assert headers["authorization"] == f"Bearer {KEY}"
    assert "openai-organization" not in headers
    assert "openai-project" not in headers


def test_reply_names_are_decoded_and_raw_arguments_kept(http: Any) -> None:
    reply = completion(
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "fs__read", "arguments": '{"path": "a.md"'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "shell__exec", "arguments": "rm -rf /"},
                },
            ],
        },
        usage={"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
    )
    reply["choices"][0]["finish_reason"] = "tool_calls"
    turn = complete_with(http, Vendor(httpx2.Response(200, json=reply)))
    assert turn == ModelTurn(
        text="Reading.",
        tool_calls=(
            ProposedCall(id="call_a", name="fs.read", arguments='{"path": "a.md"'),
            ProposedCall(id="call_b", name="shell__exec", arguments="rm -rf /"),
        ),
        usage=Usage(prompt_tokens=12, completion_tokens=5),
        finish_reason="tool_calls",
    )


def test_missing_usage_is_none_not_zero(http: Any) -> None:
    turn = complete_with(
        http, Vendor(httpx2.Response(200, json=completion({"role": "assistant", "content": "x"})))
    )
    assert turn.usage is None
    assert turn.tool_calls == ()
    assert turn.finish_reason == "stop"


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(completion({"role": "assistant"}) | {"choices": []}, id="empty-choices"),
        pytest.param({"id": "x", "object": "chat.completion"}, id="no-choices"),
        pytest.param(completion({}) | {"choices": [{"message": None}]}, id="message-none"),
        pytest.param(completion({}) | {"choices": "nope"}, id="choices-not-a-list"),
        pytest.param(completion({"content": 5}), id="content-not-text"),
        pytest.param(completion({"content": None, "tool_calls": {"id": "x"}}), id="calls-not-list"),
        pytest.param(
            completion(
                {
                    "tool_calls": [
                        {"type": "function", "function": {"name": "fs__read", "arguments": "{}"}}
                    ]
                }
            ),
            id="call-without-id",
        ),
        pytest.param(
            completion(
                {
                    "tool_calls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "fs__read", "arguments": {"a": 1}},
                        }
                    ]
                }
            ),
            id="arguments-not-a-string",
        ),
        pytest.param(
            completion(
                {
                    "tool_calls": [
                        {"id": "c", "type": "custom", "custom": {"name": "fs__read", "input": "x"}}
                    ]
                }
            ),
            id="non-function-call",
        ),
        pytest.param(
            completion({"content": "x"}, usage={"prompt_tokens": "many", "completion_tokens": 1}),
            id="usage-junk",
        ),
        pytest.param([1, 2, 3], id="json-array"),
    ],
)
def test_malformed_replies_are_provider_errors_not_attribute_errors(http: Any, body: Any) -> None:
    vendor = Vendor(httpx2.Response(200, json=body))
    with pytest.raises(ProviderError) as caught:
        complete_with(http, vendor)
    assert caught.value.kind == "malformed_response"
    assert len(vendor.requests) == 1  # a malformed reply is not retried


@pytest.mark.parametrize("text", ["not json", ""])
def test_a_non_json_body_is_malformed(http: Any, text: str) -> None:
    with pytest.raises(ProviderError) as caught:
        complete_with(http, Vendor(httpx2.Response(200, text=text)))
    assert caught.value.kind == "malformed_response"


def test_a_tool_whose_schema_cannot_be_offered_is_a_bad_request_before_any_io(http: Any) -> None:
    vendor = Vendor()
    tools = [{"type": "function", "function": {"name": "x.y", "parameters": {"type": "string"}}}]
    with pytest.raises(ProviderError) as caught:
        complete_with(http, vendor, tools=tools)
    assert caught.value.kind == "bad_request"
    assert "x.y" in caught.value.message
    assert vendor.requests == []


def test_identity_is_live_and_names_the_model(http: Any) -> None:
    provider: Provider = OpenAIProvider(SETTINGS, http_client=http(Vendor()))
    assert provider.identity == ProviderIdentity(
        name="openai-compatible", model="gpt-test", live=True
    )
    named = ProviderSettings(base_url="http://x", model="m", api_key=KEY, provider_name="groq")
    assert OpenAIProvider(named, http_client=http(Vendor())).identity.name == "groq"


def test_closing_the_provider_leaves_an_injected_client_open(http: Any) -> None:
    client = http(Vendor())
    with OpenAIProvider(SETTINGS, http_client=client):
        pass
    assert not client.is_closed
    owned = OpenAIProvider(SETTINGS)
    owned.close()
    assert owned._client.is_closed()


def test_history_names_outside_the_tool_list_are_encoded_and_foreign_ones_kept(http: Any) -> None:
    history = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "fs.delete", "arguments": "{}"},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "shell__exec", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "blocked"},
        {"role": "tool", "tool_call_id": "c2", "content": "unknown tool"},
    ]
    vendor = Vendor(httpx2.Response(200, json=completion({"role": "assistant", "content": "ok"})))
    complete_with(http, vendor, messages=history)
    sent = vendor.body()["messages"][1]["tool_calls"]
    assert [call["function"]["name"] for call in sent] == ["fs__delete", "shell__exec"]
    assert [m.get("tool_call_id") for m in vendor.body()["messages"][2:]] == ["c1", "c2"]
