"""OpenAIProvider's retry policy and error normalisation, observed through an injected sleep."""

from __future__ import annotations

import datetime as dt
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest

from governance.core._clock import ManualClock
from harness._errors import ProviderError
from harness.providers._openai import OpenAIProvider
from harness.providers._settings import ProviderSettings

KEY = "sk-test-SECRET-0123456789"
MESSAGES = [{"role": "user", "content": "hi"}]
OK = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}
    ],
}


def settings(**overrides: Any) -> ProviderSettings:
    values: dict[str, Any] = {"base_url": "http://vendor.test/v1", "model": "m", "api_key": KEY}
    values.update(overrides)
    return ProviderSettings(**values)


Answer = httpx2.Response | Callable[[httpx2.Request], httpx2.Response]


class Run:
    """One provider over a scripted vendor, with every request and every sleep recorded."""

    def __init__(
        self, answers: list[Answer], client_for: Callable[..., httpx2.Client], **overrides: Any
    ) -> None:
        self.answers = answers
        self.requests: list[httpx2.Request] = []
        self.sleeps: list[float] = []
        clock = overrides.pop("clock", None)
        self.provider = OpenAIProvider(
            settings(**overrides),
            http_client=client_for(self._handle),
            sleep=self.sleeps.append,
            clock=clock,
        )

    def _handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        return answer(request) if callable(answer) else answer

    def complete(self) -> Any:
        return self.provider.complete(MESSAGES, [])

    def fail(self) -> ProviderError:
        with pytest.raises(ProviderError) as caught:
            self.complete()
        return caught.value


@pytest.fixture
def client_for() -> Iterator[Callable[..., httpx2.Client]]:
    clients: list[httpx2.Client] = []

    def make(handler: Callable[[httpx2.Request], httpx2.Response]) -> httpx2.Client:
        client = httpx2.Client(transport=httpx2.MockTransport(handler))
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def error(
    status: int,
    message: str = "nope",
    headers: dict[str, str] | None = None,
    code: str | None = None,
) -> httpx2.Response:
    return httpx2.Response(
        status, headers=headers, json={"error": {"message": message, "type": "x", "code": code}}
    )


def read_timeout(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ReadTimeout("timed out", request=request)


def refused(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ConnectError(f"connection refused (token {KEY})", request=request)


def test_429_with_retry_after_waits_exactly_that_long(client_for: Any) -> None:
    run = Run([error(429, headers={"Retry-After": "2"}), httpx2.Response(200, json=OK)], client_for)
    assert run.complete().text == "done"
    assert run.sleeps == [2.0]
    assert len(run.requests) == 2


def test_two_5xx_then_success_backs_off_exponentially(client_for: Any) -> None:
    run = Run([error(500), error(503), httpx2.Response(200, json=OK)], client_for)
    assert run.complete().text == "done"
    assert run.sleeps == [1.0, 2.0]


def test_5xx_every_time_gives_up_after_max_retries_plus_one_requests(client_for: Any) -> None:
    run = Run([error(500), error(500), error(500), httpx2.Response(200, json=OK)], client_for)
    failure = run.fail()
    assert (failure.kind, failure.status) == ("server_error", 500)
    assert len(run.requests) == 3
    assert run.sleeps == [1.0, 2.0]


def test_max_retries_zero_means_one_attempt(client_for: Any) -> None:
    run = Run([error(502), httpx2.Response(200, json=OK)], client_for, max_retries=0)
    assert run.fail().kind == "server_error"
    assert len(run.requests) == 1
    assert run.sleeps == []


def test_the_sdks_own_retries_are_off(client_for: Any) -> None:
    run = Run([error(500), httpx2.Response(200, json=OK)], client_for, max_retries=0)
    run.fail()
    assert run.requests[0].headers["x-stainless-retry-count"] == "0"
    assert len(run.answers) == 1  # the 200 was never asked for


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "bad_request"),
        (422, "bad_request"),
        (401, "auth"),
        (403, "auth"),
        (404, "not_found"),
        (408, "timeout"),
    ],
)
def test_client_errors_are_never_retried(client_for: Any, status: int, kind: str) -> None:
    run = Run([error(status), httpx2.Response(200, json=OK)], client_for)
    failure = run.fail()
    assert (failure.kind, failure.status) == (kind, status)
    assert len(run.requests) == 1
    assert run.sleeps == []


def test_retry_after_is_capped_at_max_backoff(client_for: Any) -> None:
    run = Run(
        [error(429, headers={"Retry-After": "3600"}), httpx2.Response(200, json=OK)],
        client_for,
        max_backoff=5.0,
    )
    run.complete()
    assert run.sleeps == [5.0]


def test_backoff_is_capped_at_max_backoff(client_for: Any) -> None:
    run = Run(
        [error(500)] * 4 + [httpx2.Response(200, json=OK)],
        client_for,
        max_retries=4,
        max_backoff=3.0,
    )
    run.complete()
    assert run.sleeps == [1.0, 2.0, 3.0, 3.0]


def test_retry_after_as_an_http_date_is_measured_from_the_response_date(client_for: Any) -> None:
    headers = {
        "Retry-After": "Wed, 21 Oct 2026 07:28:07 GMT",
        "Date": "Wed, 21 Oct 2026 07:28:00 GMT",
    }
    run = Run(
        [error(503, headers=headers), httpx2.Response(200, json=OK)],
        client_for,
        clock=ManualClock(dt.datetime(2000, 1, 1, tzinfo=dt.UTC)),
    )
    run.complete()
    assert run.sleeps == [7.0]


def test_retry_after_date_without_a_date_header_uses_the_injected_clock(client_for: Any) -> None:
    headers = {"Retry-After": "Wed, 21 Oct 2026 07:28:03 GMT"}
    clock = ManualClock(dt.datetime(2026, 10, 21, 7, 28, 0, tzinfo=dt.UTC))
    run = Run([error(429, headers=headers), httpx2.Response(200, json=OK)], client_for, clock=clock)
    run.complete()
    assert run.sleeps == [3.0]


def test_retry_after_ms_is_honoured(client_for: Any) -> None:
    run = Run(
        [error(429, headers={"retry-after-ms": "250"}), httpx2.Response(200, json=OK)], client_for
    )
    run.complete()
    assert run.sleeps == [0.25]


@pytest.mark.parametrize("value", ["soon", "-5", "nan"])
def test_unusable_retry_after_falls_back_to_backoff(client_for: Any, value: str) -> None:
    run = Run(
        [error(429, headers={"Retry-After": value}), httpx2.Response(200, json=OK)], client_for
    )
    run.complete()
    assert run.sleeps == [1.0]


def test_an_exhausted_quota_is_rate_limited_but_not_retried(client_for: Any) -> None:
    run = Run(
        [
            error(429, "You exceeded your current quota", code="insufficient_quota"),
            httpx2.Response(200, json=OK),
        ],
        client_for,
    )
    failure = run.fail()
    assert (failure.kind, failure.status) == ("rate_limited", 429)
    assert len(run.requests) == 1


def test_rate_limited_every_time_reports_rate_limited(client_for: Any) -> None:
    run = Run([error(429), error(429), error(429)], client_for)
    failure = run.fail()
    assert (failure.kind, failure.status) == ("rate_limited", 429)
    assert len(run.requests) == 3


def test_a_timeout_is_one_attempt_and_a_timeout_error(client_for: Any) -> None:
    run = Run([read_timeout, httpx2.Response(200, json=OK)], client_for)
    failure = run.fail()
    assert failure.kind == "timeout"
    assert failure.status is None
    assert len(run.requests) == 1
    assert run.sleeps == []


def test_connection_errors_are_retried_then_reported(client_for: Any) -> None:
    run = Run([refused, refused, refused], client_for)
    failure = run.fail()
    assert failure.kind == "connection"
    assert len(run.requests) == 3
    assert run.sleeps == [1.0, 2.0]


def test_a_connection_error_then_success_recovers(client_for: Any) -> None:
    run = Run([refused, httpx2.Response(200, json=OK)], client_for)
    assert run.complete().text == "done"
    assert run.sleeps == [1.0]


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(error(401, f"Incorrect API key provided: {KEY}"), id="auth-echo"),
        pytest.param(error(400, f"bad key {KEY} in request"), id="bad-request-echo"),
        pytest.param(error(500, f"upstream saw {KEY}"), id="server-echo"),
        pytest.param(refused, id="connection-echo"),
        pytest.param(read_timeout, id="timeout"),
    ],
)
def test_the_api_key_never_appears_in_an_error(client_for: Any, answer: Answer) -> None:
    run = Run([answer, answer, answer], client_for)
    failure = run.fail()
    rendered = "".join(traceback.format_exception(failure))
    for text in (str(failure), repr(failure), failure.message, rendered):
        assert KEY not in text
    assert failure.__cause__ is None
    assert failure.__suppress_context__ or failure.__context__ is None


def test_error_messages_say_where_and_what(client_for: Any) -> None:
    run = Run([error(404, "The model `m` does not exist")], client_for)
    failure = run.fail()
    assert "http://vendor.test " in failure.message  # the origin alone: a path may hold a token
    assert "404" in failure.message
    assert "does not exist" in failure.message
