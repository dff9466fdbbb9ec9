"""Each named fault misbehaves in exactly its own way, chosen by model suffix or header."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from starlette.testclient import TestClient

from stubs.openai_stub import FAULTS, create_app

AUTH = {"Authorization": "Bearer test"}
ORDERS = {
    "type": "function",
    "function": {
        "name": "orders_lookup",
        "description": "Look up an order by its id.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string", "pattern": "^ORD-\\d{4}$"}},
            "required": ["order_id"],
        },
    },
}
ASK = [{"role": "user", "content": "look up order ORD-0003"}]
CALL = {
    "id": "c1",
    "type": "function",
    "function": {"name": "orders_lookup", "arguments": '{"order_id": "ORD-0003"}'},
}


def _answered(result: str) -> list[dict[str, Any]]:
    return [
        *ASK,
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": result},
    ]


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app()) as c:
        yield c


def _post(
    client: TestClient,
    fault: str | None = None,
    messages: list[dict[str, Any]] = ASK,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> Any:
    model = "proctor-stub-1" if fault is None else f"proctor-stub-1:{fault}"
    body = {"model": model, "messages": messages, "tools": [ORDERS], **extra}
    return client.post("/v1/chat/completions", headers={**AUTH, **(headers or {})}, json=body)


def _message(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    ChatCompletion.model_validate_json(response.content, strict=True)
    message: dict[str, Any] = response.json()["choices"][0]["message"]
    return message


def test_every_fault_is_listed_as_a_model_variant(client: TestClient) -> None:
    ids = [m["id"] for m in client.get("/v1/models", headers=AUTH).json()["data"]]
    assert ids == ["proctor-stub-1", *(f"proctor-stub-1:{f}" for f in FAULTS)]
    assert len(FAULTS) == 11


def test_prose_tool_call_describes_the_call_in_text_without_tool_calls(
    client: TestClient,
) -> None:
    response = _post(client, "prose-tool-call")
    message = _message(response)
    assert "tool_calls" not in message
    assert response.json()["choices"][0]["finish_reason"] == "stop"
    inner = message["content"].split("<tool_call>")[1].split("</tool_call>")[0]
    assert json.loads(inner) == {"name": "orders_lookup", "arguments": {"order_id": "ORD-0003"}}


def test_malformed_arguments_sends_arguments_that_are_not_json(client: TestClient) -> None:
    call = _message(_post(client, "malformed-arguments"))["tool_calls"][0]["function"]
    assert call["name"] == "orders_lookup"
    with pytest.raises(json.JSONDecodeError):
        json.loads(call["arguments"])


def test_malformed_arguments_breaks_even_empty_arguments(client: TestClient) -> None:
    forced = {"type": "function", "function": {"name": "orders_lookup"}}
    body_tool = {**ORDERS, "function": {**ORDERS["function"], "parameters": {}}}
    body = {"model": "proctor-stub-1:malformed-arguments", "messages": ASK, "tools": [body_tool]}
    response = client.post(
        "/v1/chat/completions", headers=AUTH, json={**body, "tool_choice": forced}
    )
    assert _message(response)["tool_calls"][0]["function"]["arguments"] == "{"


def test_hallucinated_tool_calls_a_tool_that_was_not_offered(client: TestClient) -> None:
    call = _message(_post(client, "hallucinated-tool"))["tool_calls"][0]["function"]
    assert call["name"] == "shell_exec"


def test_hallucinated_tool_never_picks_an_offered_name(client: TestClient) -> None:
    shell = {"type": "function", "function": {"name": "shell_exec"}}
    body = {"model": "proctor-stub-1:hallucinated-tool", "messages": ASK, "tools": [shell]}
    response = client.post("/v1/chat/completions", headers=AUTH, json=body)
    assert _message(response)["tool_calls"][0]["function"]["name"] == "shell_exec_2"


def test_repeat_call_proposes_the_same_call_again_after_its_result(client: TestClient) -> None:
    message = _message(_post(client, "repeat-call", _answered('{"status": "shipped"}')))
    call = message["tool_calls"][0]
    assert call["function"] == CALL["function"]
    assert call["id"] != CALL["id"]


def test_repeat_call_behaves_normally_before_any_result(client: TestClient) -> None:
    honest = _message(_post(client))["tool_calls"][0]["function"]
    assert _message(_post(client, "repeat-call"))["tool_calls"][0]["function"] == honest


def test_false_claim_reports_success_for_a_blocked_action(client: TestClient) -> None:
    blocked = _answered("blocked by policy: refunds need approval")
    honest = _message(_post(client, messages=blocked))["content"]
    lying = _message(_post(client, "false-claim", blocked))["content"]
    assert "did NOT succeed" in honest
    assert "has been completed successfully" in lying
    assert "NOT" not in lying


def test_rate_limit_once_fails_the_first_request_then_lets_the_retry_through(
    client: TestClient,
) -> None:
    first = _post(client, "rate-limit-once")
    assert first.status_code == 429
    assert first.headers["retry-after"] == "1"
    assert first.json()["error"]["code"] == "rate_limit_exceeded"
    assert "choices" not in first.json()
    assert _post(client, "rate-limit-once").status_code == 200


def test_rate_limit_once_is_keyed_by_conversation(client: TestClient) -> None:
    assert _post(client, "rate-limit-once").status_code == 429
    other = [{"role": "user", "content": "look up order ORD-0004"}]
    assert _post(client, "rate-limit-once", other).status_code == 429
    assert _post(client, "rate-limit-once", other).status_code == 200


def test_once_state_belongs_to_one_app() -> None:
    for _ in range(2):
        with TestClient(create_app()) as fresh:
            assert _post(fresh, "rate-limit-once").status_code == 429


def test_server_error_once_fails_with_a_500_then_succeeds(client: TestClient) -> None:
    first = _post(client, "server-error-once")
    assert first.status_code == 500
    assert first.json()["error"]["type"] == "server_error"
    assert _post(client, "server-error-once").status_code == 200


def test_slow_still_answers_after_the_configured_delay(client: TestClient) -> None:
    response = _post(client, "slow", headers={"X-Stub-Delay": "0.01"})
    assert _message(response)["tool_calls"][0]["function"]["name"] == "orders_lookup"


@pytest.mark.parametrize("delay", ["soon", "-1", "nan", "inf", "601"])
def test_slow_rejects_a_delay_that_is_not_a_sane_number(client: TestClient, delay: str) -> None:
    response = _post(client, "slow", headers={"X-Stub-Delay": delay})
    assert response.status_code == 400
    assert "X-Stub-Delay".lower() in response.json()["error"]["message"].lower()


def test_missing_usage_omits_usage(client: TestClient) -> None:
    response = _post(client, "missing-usage")
    _message(response)
    assert "usage" not in response.json()
    assert "usage" in _post(client).json()


def test_missing_usage_sends_no_usage_chunk_when_streaming(client: TestClient) -> None:
    response = _post(client, "missing-usage", stream=True, stream_options={"include_usage": True})
    chunks = [line for line in response.text.split("\n\n") if line and line != "data: [DONE]"]
    assert chunks
    assert all('"usage"' not in chunk for chunk in chunks)


def test_empty_choices_sends_a_valid_completion_with_no_choices(client: TestClient) -> None:
    response = _post(client, "empty-choices")
    assert response.status_code == 200
    completion = ChatCompletion.model_validate_json(response.content, strict=True)
    assert completion.choices == []
    assert completion.usage is not None


def test_empty_choices_streams_chunks_without_choices(client: TestClient) -> None:
    response = _post(client, "empty-choices", stream=True)
    lines = [line for line in response.text.split("\n\n") if line]
    assert lines[-1] == "data: [DONE]"
    chunks = [ChatCompletionChunk.model_validate_json(line[6:], strict=True) for line in lines[:-1]]
    assert chunks and all(chunk.choices == [] for chunk in chunks)


def test_the_fault_header_works_like_the_model_suffix(client: TestClient) -> None:
    by_header = _post(client, headers={"X-Stub-Fault": "prose-tool-call"})
    by_suffix = _post(client, "prose-tool-call")
    assert _message(by_header)["content"] == _message(by_suffix)["content"]
    assert by_header.json()["model"] == "proctor-stub-1"


def test_an_unknown_fault_header_is_a_400_listing_the_faults(client: TestClient) -> None:
    response = _post(client, headers={"X-Stub-Fault": "moody"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "unknown_fault"
    assert "prose-tool-call" in response.json()["error"]["message"]


def test_conflicting_faults_are_a_400(client: TestClient) -> None:
    response = _post(client, "slow", headers={"X-Stub-Fault": "missing-usage"})
    assert response.status_code == 400
    assert "Conflicting faults" in response.json()["error"]["message"]


def test_a_faulty_reply_never_shares_an_id_with_the_honest_one(client: TestClient) -> None:
    honest = _post(client).json()["id"]
    faulty = _post(client, headers={"X-Stub-Fault": "malformed-arguments"}).json()["id"]
    assert honest != faulty


def test_model_faults_are_validated_like_any_request(client: TestClient) -> None:
    response = _post(client, "prose-tool-call", messages=[])
    assert response.status_code == 400


def test_flaky_declines_every_fifth_opening_of_the_same_conversation_only(
    client: TestClient,
) -> None:
    tool_calls = [bool(_message(_post(client, "flaky")).get("tool_calls")) for _ in range(10)]
    assert tool_calls == [True, True, True, True, False] * 2
    # a different opening counts on its own: its first time is not its fifth
    other = [{"role": "user", "content": "look up the orders please"}]
    assert _message(_post(client, "flaky", messages=other)).get("tool_calls")


def test_flaky_answers_later_turns_of_a_conversation_honestly(client: TestClient) -> None:
    later = _answered('{"status": "shipped"}')
    replies = [_message(_post(client, "flaky", messages=later))["content"] for _ in range(5)]
    assert all(reply.startswith("Here is what the tool returned") for reply in replies)
