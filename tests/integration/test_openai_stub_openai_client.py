"""The real `openai` SDK against the vendor stub over real loopback HTTP: no credential needed."""

from __future__ import annotations

import json
import select
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from governance import AddressUnavailable
from stubs.openai_stub import running_stub

pytestmark = pytest.mark.slow

MODEL = "proctor-stub-1"
REFUND = {
    "type": "function",
    "function": {
        "name": "payments_refund",
        "description": "Refund money for an order.",
        "parameters": {
            "type": "object",
            "properties": {
                "order_id": {"type": "string", "pattern": "^ORD-\\d{4}$"},
                "amount": {"type": "number"},
            },
            "required": ["order_id", "amount"],
        },
    },
}
ASK = [{"role": "user", "content": "Refund 25 dollars for order ORD-0042"}]


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with running_stub() as url:
        yield url


def _client(base_url: str, **options: Any) -> openai.OpenAI:
    settings: dict[str, Any] = {"max_retries": 0, "timeout": 10.0, **options}
    return openai.OpenAI(base_url=base_url, api_key="test", **settings)


def _ask(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


def test_a_tool_call_round_trip_ends_in_a_summary_quoting_the_result(base_url: str) -> None:
    with _client(base_url) as client:
        first = client.chat.completions.create(model=MODEL, messages=ASK, tools=[REFUND])
        message = first.choices[0].message
        assert first.choices[0].finish_reason == "tool_calls"
        call = message.tool_calls[0]
        assert call.function.name == "payments_refund"
        assert json.loads(call.function.arguments) == {"order_id": "ORD-0042", "amount": 25}
        history = [
            *ASK,
            message,  # the SDK object itself, as many agent loops send it back
            {"role": "tool", "tool_call_id": call.id, "content": '{"refunded": 25}'},
        ]
        second = client.chat.completions.create(model=MODEL, messages=history, tools=[REFUND])
    summary = second.choices[0].message.content or ""
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.tool_calls is None
    assert 'payments_refund returned: "{"refunded": 25}"' in summary
    assert second.usage is not None and second.usage.prompt_tokens > 0


def test_streaming_delivers_the_tool_call_then_usage(base_url: str) -> None:
    name, arguments, finish, usage = "", "", None, None
    with _client(base_url) as client:
        stream = client.chat.completions.create(
            model=MODEL,
            messages=ASK,
            tools=[REFUND],
            stream=True,
            stream_options={"include_usage": True},
        )
        with stream:
            for chunk in stream:
                usage = chunk.usage or usage
                for choice in chunk.choices:
                    finish = choice.finish_reason or finish
                    for delta in choice.delta.tool_calls or []:
                        name += (delta.function and delta.function.name) or ""
                        arguments += (delta.function and delta.function.arguments) or ""
    assert name == "payments_refund"
    assert json.loads(arguments) == {"order_id": "ORD-0042", "amount": 25}
    assert finish == "tool_calls"
    assert usage is not None and usage.completion_tokens > 0


def test_a_tool_call_described_in_prose_cannot_be_answered_as_a_tool_result(
    base_url: str,
) -> None:
    with _client(base_url) as client:
        prose = client.chat.completions.create(
            model=f"{MODEL}:prose-tool-call",
            messages=ASK,
            tools=[REFUND],
        )
        text = prose.choices[0].message.content or ""
        assert "<tool_call>" in text and prose.choices[0].message.tool_calls is None
        # A careless loop "executes" the prose call and answers it as if it were a real call.
        history = [
            *ASK,
            {"role": "assistant", "content": text},
            {"role": "tool", "tool_call_id": "payments_refund", "content": "refunded"},
        ]
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(model=MODEL, messages=history, tools=[REFUND])
    assert caught.value.status_code == 400
    assert caught.value.param == "messages[2].tool_call_id"


def test_a_rate_limit_carries_retry_after(base_url: str) -> None:
    with _client(base_url) as client, pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(
            model=f"{MODEL}:rate-limit-once",
            messages=_ask("rate limit me, no retries"),
        )
    assert caught.value.response.headers["retry-after"] == "1"
    assert caught.value.code == "rate_limit_exceeded"


def test_a_rate_limit_once_succeeds_on_the_clients_own_retry(base_url: str) -> None:
    with _client(base_url, max_retries=1) as client:
        raw = client.chat.completions.with_raw_response.create(
            model=f"{MODEL}:rate-limit-once",
            messages=ASK,
            tools=[REFUND],
        )
    assert raw.retries_taken == 1
    assert raw.parse().choices[0].finish_reason == "tool_calls"


def test_a_reply_slower_than_the_client_timeout_is_an_api_timeout_error(base_url: str) -> None:
    with _client(base_url, timeout=0.3) as client:
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(model=f"{MODEL}:slow", messages=ASK)
        # The stub is still responsive to everyone else.
        fine = client.chat.completions.create(model=MODEL, messages=_ask("hello"))
    assert fine.choices[0].message.content


def test_the_delay_header_makes_a_slow_reply_fit_the_timeout(base_url: str) -> None:
    with _client(base_url, timeout=5.0) as client:
        reply = client.chat.completions.create(
            model=MODEL,
            messages=_ask("hello"),
            extra_headers={"X-Stub-Fault": "slow", "X-Stub-Delay": "0.05"},
        )
    assert reply.choices[0].message.content


def test_an_unknown_model_is_not_found(base_url: str) -> None:
    with _client(base_url) as client, pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(model="gpt-4o", messages=ASK)
    assert caught.value.code == "model_not_found"


def test_a_missing_key_is_an_authentication_error(base_url: str) -> None:
    with _client(base_url, default_headers={"Authorization": ""}) as client:
        with pytest.raises(openai.AuthenticationError):
            client.models.list()


def test_the_sdk_lists_the_stub_models(base_url: str) -> None:
    with _client(base_url) as client:
        ids = [model.id for model in client.models.list()]
    assert ids[0] == MODEL and f"{MODEL}:slow" in ids


def test_a_taken_port_fails_fast_with_a_clear_error(base_url: str) -> None:
    port = int(base_url.rsplit(":", 1)[1].split("/")[0])
    match = f"cannot listen on 127.0.0.1:{port}: the port is already in use"
    with pytest.raises(AddressUnavailable, match=match):
        with running_stub(port):
            pass


def test_a_stopped_stub_no_longer_accepts_connections() -> None:
    with running_stub() as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_proctor_stub_serves_the_sdk_from_a_real_process() -> None:
    command = [sys.executable, "-m", "harness", "stub", "--port", "0"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    ) as proc:
        try:
            assert proc.stdout is not None
            readable, _, _ = select.select([proc.stdout], [], [], 30)
            assert readable, "proctor stub printed nothing within 30 s"
            first = proc.stdout.readline()
            assert first.startswith("vendor stub listening on http://127.0.0.1:")
            url = first.split()[4]
            with _client(url) as client:
                reply = client.chat.completions.create(model=MODEL, messages=_ask("hello"))
            assert reply.model == MODEL
        finally:
            proc.terminate()
            proc.wait(timeout=15)
