"""The vendor stub rejects malformed requests like a strict vendor: 400s naming the field."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from stubs.openai_stub import create_app

AUTH = {"Authorization": "Bearer test"}
ORDERS = {
    "type": "function",
    "function": {
        "name": "orders_lookup",
        "description": "Look up an order by its id.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    },
}
CALL = {"id": "c1", "type": "function", "function": {"name": "orders_lookup", "arguments": "{}"}}
ROUND_TRIP: list[dict[str, Any]] = [
    {"role": "user", "content": "look up order ORD-0001"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "shipped"},
]


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app()) as c:
        yield c


def _body(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "proctor-stub-1",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [copy.deepcopy(ORDERS)],
    }
    body.update(changes)
    return {k: v for k, v in body.items() if v is not _DROP}


_DROP = object()


def _tool(**function: Any) -> dict[str, Any]:
    spec = copy.deepcopy(ORDERS)
    spec["function"].update(function)
    return spec


def _with_function(key: str, value: Any) -> dict[str, Any]:
    spec = copy.deepcopy(ORDERS)
    spec["function"][key] = value
    return spec


def _call(**function: Any) -> dict[str, Any]:
    call = copy.deepcopy(CALL)
    call["function"].update(function)
    return call


def _post(client: TestClient, body: Any) -> Any:
    return client.post("/v1/chat/completions", headers=AUTH, json=body)


# (id, body, status, param, code)
CASES: list[tuple[str, dict[str, Any], int, str | None, str | None]] = [
    ("model-missing", _body(model=_DROP), 400, "model", "missing_required_parameter"),
    ("model-not-a-string", _body(model=7), 400, "model", "invalid_type"),
    ("unknown-parameter", _body(temperatur=0.2), 400, "temperatur", "unknown_parameter"),
    (
        "deprecated-functions",
        _body(functions=[{"name": "x"}]),
        400,
        "functions",
        "unsupported_parameter",
    ),
    ("n-above-one", _body(n=2), 400, "n", "unsupported_value"),
    ("messages-missing", _body(messages=_DROP), 400, "messages", "missing_required_parameter"),
    ("messages-empty", _body(messages=[]), 400, "messages", "empty_array"),
    ("messages-not-a-list", _body(messages="hi"), 400, "messages", "invalid_type"),
    ("message-not-an-object", _body(messages=["hi"]), 400, "messages[0]", "invalid_type"),
    (
        "message-without-role",
        _body(messages=[{"content": "hi"}]),
        400,
        "messages[0].role",
        "missing_required_parameter",
    ),
    (
        "unknown-role",
        _body(messages=[{"role": "robot", "content": "hi"}]),
        400,
        "messages[0].role",
        "invalid_value",
    ),
    (
        "deprecated-function-role",
        _body(messages=[{"role": "function", "name": "f", "content": "x"}]),
        400,
        "messages[0].role",
        "invalid_value",
    ),
    (
        "user-without-content",
        _body(messages=[{"role": "user"}]),
        400,
        "messages[0].content",
        "missing_required_parameter",
    ),
    (
        "content-a-number",
        _body(messages=[{"role": "user", "content": 5}]),
        400,
        "messages[0].content",
        "invalid_type",
    ),
    (
        "unknown-message-key",
        _body(messages=[{"role": "user", "content": "hi", "mood": "sad"}]),
        400,
        "messages[0].mood",
        "unknown_parameter",
    ),
    (
        "image-part-without-url",
        _body(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]),
        400,
        "messages[0].content[0].image_url.url",
        "missing_required_parameter",
    ),
    (
        "assistant-with-neither-content-nor-calls",
        _body(messages=[{"role": "user", "content": "a"}, {"role": "assistant"}]),
        400,
        "messages[1].content",
        "missing_required_parameter",
    ),
    (
        "assistant-with-function-call-without-arguments",
        _body(
            messages=[
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": "b", "function_call": {"name": "f"}},
            ]
        ),
        400,
        "messages[1].function_call.arguments",
        "missing_required_parameter",
    ),
    ("tools-not-a-list", _body(tools={"a": 1}), 400, "tools", "invalid_type"),
    ("tools-empty", _body(tools=[]), 400, "tools", "empty_array"),
    ("tool-not-an-object", _body(tools=["orders_lookup"]), 400, "tools[0]", "invalid_type"),
    (
        "tool-of-another-type",
        _body(tools=[{"type": "custom", "function": ORDERS["function"]}]),
        400,
        "tools[0].type",
        "invalid_value",
    ),
    (
        "tool-without-function",
        _body(tools=[{"type": "function"}]),
        400,
        "tools[0].function",
        "missing_required_parameter",
    ),
    (
        "tool-name-with-a-dot",
        _body(tools=[_tool(name="fs.read")]),
        400,
        "tools[0].function.name",
        "invalid_value",
    ),
    (
        "tool-name-with-a-space",
        _body(tools=[_tool(name="read file")]),
        400,
        "tools[0].function.name",
        "invalid_value",
    ),
    (
        "tool-name-of-65-chars",
        _body(tools=[_tool(name="a" * 65)]),
        400,
        "tools[0].function.name",
        "invalid_value",
    ),
    (
        "tool-name-empty",
        _body(tools=[_tool(name="")]),
        400,
        "tools[0].function.name",
        "invalid_value",
    ),
    (
        "tool-without-name",
        _body(tools=[{"type": "function", "function": {"description": "x"}}]),
        400,
        "tools[0].function.name",
        "missing_required_parameter",
    ),
    (
        "unknown-function-key",
        _body(tools=[_with_function("returns", {"type": "string"})]),
        400,
        "tools[0].function.returns",
        "unknown_parameter",
    ),
    (
        "parameters-a-list",
        _body(tools=[_with_function("parameters", [])]),
        400,
        "tools[0].function.parameters",
        "invalid_type",
    ),
    (
        "parameters-not-an-object-schema",
        _body(tools=[_with_function("parameters", {"type": "string"})]),
        400,
        "tools[0].function.parameters",
        "invalid_function_parameters",
    ),
    (
        "parameters-not-json-schema",
        _body(tools=[_with_function("parameters", {"type": "object", "properties": 5})]),
        400,
        "tools[0].function.parameters",
        "invalid_function_parameters",
    ),
    (
        "duplicate-tool-names",
        _body(tools=[copy.deepcopy(ORDERS), _tool(description="again")]),
        400,
        "tools[1].function.name",
        "duplicate_tool_name",
    ),
    (
        "tool-choice-without-tools",
        _body(tools=_DROP, tool_choice="required"),
        400,
        "tool_choice",
        "invalid_value",
    ),
    (
        "tool-choice-names-a-missing-tool",
        _body(tool_choice={"type": "function", "function": {"name": "email_send"}}),
        400,
        "tool_choice.function.name",
        "invalid_value",
    ),
    (
        "stream-options-without-stream",
        _body(stream_options={"include_usage": True}),
        400,
        "stream_options",
        "invalid_value",
    ),
    ("stream-not-a-boolean", _body(stream="yes"), 400, "stream", "invalid_type"),
    (
        "tool-answer-with-no-matching-call",
        _body(
            messages=[
                {"role": "user", "content": "a"},
                {"role": "tool", "tool_call_id": "c9", "content": "x"},
            ]
        ),
        400,
        "messages[1].tool_call_id",
        "invalid_value",
    ),
    (
        "tool-answer-without-tool-call-id",
        _body(messages=[*ROUND_TRIP[:2], {"role": "tool", "content": "x"}]),
        400,
        "messages[2].tool_call_id",
        "missing_required_parameter",
    ),
    (
        "tool-call-unanswered-before-the-next-user-message",
        _body(messages=[*ROUND_TRIP[:2], {"role": "user", "content": "and?"}]),
        400,
        "messages[1].tool_calls",
        "invalid_value",
    ),
    (
        "tool-call-unanswered-at-the-end",
        _body(messages=ROUND_TRIP[:2]),
        400,
        "messages[1].tool_calls",
        "invalid_value",
    ),
    (
        "one-of-two-calls-unanswered",
        _body(
            messages=[
                ROUND_TRIP[0],
                {"role": "assistant", "tool_calls": [CALL, {**CALL, "id": "c2"}]},
                ROUND_TRIP[2],
            ]
        ),
        400,
        "messages[1].tool_calls",
        "invalid_value",
    ),
    (
        "tool-call-answered-twice",
        _body(messages=[*ROUND_TRIP, ROUND_TRIP[2]]),
        400,
        "messages[3].tool_call_id",
        "invalid_value",
    ),
    (
        "arguments-an-object-not-a-string",
        _body(messages=[ROUND_TRIP[0], {"role": "assistant", "tool_calls": [_call(arguments={})]}]),
        400,
        "messages[1].tool_calls[0].function.arguments",
        "invalid_type",
    ),
    (
        "history-call-name-with-a-dot",
        _body(
            messages=[ROUND_TRIP[0], {"role": "assistant", "tool_calls": [_call(name="fs.read")]}]
        ),
        400,
        "messages[1].tool_calls[0].function.name",
        "invalid_value",
    ),
    (
        "history-call-without-type",
        _body(
            messages=[
                ROUND_TRIP[0],
                {"role": "assistant", "tool_calls": [{"id": "c1", "function": CALL["function"]}]},
            ]
        ),
        400,
        "messages[1].tool_calls[0].type",
        "missing_required_parameter",
    ),
    (
        "duplicate-call-ids-in-one-message",
        _body(messages=[ROUND_TRIP[0], {"role": "assistant", "tool_calls": [CALL, CALL]}]),
        400,
        "messages[1].tool_calls[1].id",
        "invalid_value",
    ),
    (
        "empty-tool-calls",
        _body(messages=[ROUND_TRIP[0], {"role": "assistant", "content": "x", "tool_calls": []}]),
        400,
        "messages[1].tool_calls",
        "empty_array",
    ),
    ("unknown-model", _body(model="gpt-4o"), 404, None, "model_not_found"),
    ("unknown-fault-suffix", _body(model="proctor-stub-1:moody"), 404, None, "model_not_found"),
]


@pytest.mark.parametrize(
    ("body", "status", "param", "code"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_malformed_request_gets_an_openai_shaped_error_naming_the_parameter(
    client: TestClient, body: dict[str, Any], status: int, param: str | None, code: str | None
) -> None:
    response = _post(client, body)
    assert response.status_code == status
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert error["code"] == code
    assert error["message"]


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b'{"model": NaN}', b"\xff\xfe"], ids=str)
def test_a_body_that_is_not_one_json_object_is_a_400(client: TestClient, raw: bytes) -> None:
    response = client.post(
        "/v1/chat/completions", headers={**AUTH, "content-type": "application/json"}, content=raw
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"


def test_a_tool_answer_that_skips_past_a_user_turn_names_the_call_it_belongs_to(
    client: TestClient,
) -> None:
    messages = [*ROUND_TRIP, {"role": "user", "content": "again"}, ROUND_TRIP[2]]
    response = _post(client, _body(messages=messages))
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert "messages[1]" in message and "directly follow" in message


def test_a_tool_call_described_in_prose_cannot_be_answered_with_a_tool_message(
    client: TestClient,
) -> None:
    prose = '<tool_call>{"name": "orders_lookup", "arguments": {}}</tool_call>'
    messages = [
        ROUND_TRIP[0],
        {"role": "assistant", "content": prose},
        {"role": "tool", "tool_call_id": "orders_lookup", "content": "shipped"},
    ]
    response = _post(client, _body(messages=messages))
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "messages[2].tool_call_id"
    assert "No earlier assistant message" in response.json()["error"]["message"]


def test_the_unanswered_call_ids_are_listed(client: TestClient) -> None:
    messages = [ROUND_TRIP[0], {"role": "assistant", "tool_calls": [CALL, {**CALL, "id": "c2"}]}]
    response = _post(client, _body(messages=messages))
    assert response.json()["error"]["message"].endswith("c1, c2")


VALID: list[tuple[str, dict[str, Any]]] = [
    ("a-full-tool-round-trip", _body(messages=ROUND_TRIP)),
    (
        "two-calls-answered-in-any-order",
        _body(
            messages=[
                ROUND_TRIP[0],
                {"role": "assistant", "tool_calls": [CALL, {**CALL, "id": "c2"}]},
                {"role": "tool", "tool_call_id": "c2", "content": "b"},
                {"role": "tool", "tool_call_id": "c1", "content": "a"},
            ]
        ),
    ),
    (
        "an-sdk-echoed-assistant-message-with-null-extras",
        _body(
            messages=[
                ROUND_TRIP[0],
                {**ROUND_TRIP[1], "refusal": None, "audio": None, "function_call": None,
                 "annotations": None},
                ROUND_TRIP[2],
            ]
        ),
    ),
    (
        "text-content-parts",
        _body(
            messages=[
                {"role": "system", "content": [{"type": "text", "text": "be brief"}]},
                {"role": "developer", "content": "really"},
                {"role": "user", "content": [{"type": "text", "text": "look up ORD-0001"}]},
            ]
        ),
    ),
    ("a-function-without-parameters", _body(tools=[_with_function("parameters", {})])),
    ("tools-null", _body(tools=None)),
    ("no-tools-at-all", _body(tools=_DROP)),
    ("known-sampling-parameters", _body(temperature=0, seed=1, max_tokens=10, n=1, user="u")),
    ("tool-choice-required", _body(tool_choice="required")),
    (
        "tool-choice-naming-a-tool",
        _body(tool_choice={"type": "function", "function": {"name": "orders_lookup"}}),
    ),
    ("tool-choice-none-without-tools", _body(tools=_DROP, tool_choice="none")),
    ("stream-with-options", _body(stream=True, stream_options={"include_usage": True})),
]  # fmt: skip


@pytest.mark.parametrize("body", [v[1] for v in VALID], ids=[v[0] for v in VALID])
def test_a_well_formed_request_is_accepted(client: TestClient, body: dict[str, Any]) -> None:
    response = _post(client, body)
    assert response.status_code == 200, response.text


def test_the_error_body_is_valid_json_even_for_unknown_urls_and_methods(
    client: TestClient,
) -> None:
    lost = client.get("/v1/engines", headers=AUTH)
    wrong = client.get("/v1/chat/completions", headers=AUTH)
    assert lost.status_code == 404 and lost.json()["error"]["code"] == "unknown_url"
    assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "method_not_allowed"


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer "},
        {"Authorization": "Basic dXNlcjpwdw=="},
        {"Authorization": ""},
    ],
    ids=["no-header", "empty-key", "basic-auth", "empty-header"],
)
def test_a_request_without_a_bearer_key_is_a_401(
    client: TestClient, headers: dict[str, str]
) -> None:
    for response in (
        client.post("/v1/chat/completions", headers=headers, json=_body()),
        client.get("/v1/models", headers=headers),
    ):
        assert response.status_code == 401
        assert response.json()["error"]["type"] == "invalid_request_error"
        assert "choices" not in response.json()


def test_any_non_empty_key_is_accepted() -> None:
    with TestClient(create_app()) as c:
        response = c.post(
            "/v1/chat/completions", headers={"Authorization": "Bearer sk-anything"}, json=_body()
        )
    assert response.status_code == 200


def test_the_key_can_be_switched_off() -> None:
    with TestClient(create_app(api_key_required=False)) as c:
        assert c.post("/v1/chat/completions", json=_body()).status_code == 200


def test_the_error_payload_round_trips_through_json(client: TestClient) -> None:
    response = _post(client, _body(messages=[]))
    assert json.loads(response.content) == response.json()
    assert response.headers["content-type"] == "application/json"
