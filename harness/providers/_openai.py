"""The live provider: any OpenAI-compatible chat-completions endpoint, over the official SDK.

Tool calls travel as structured `tools` / `tool_calls` / `tool` messages, never as prose.
Retries are Proctor's own (the SDK's are off) so the policy is exact and testable:
429, 5xx and connection errors are retried up to `max_retries` times with exponential backoff
(1 s, 2 s, 4 s, ...) or the vendor's `Retry-After`, both capped at `max_backoff`. Timeouts are
not retried: a slow vendor stays slow, and a run should not wait `timeout` x 3. Every failure
leaves as a ProviderError whose message never contains the API key, and names the endpoint by
its origin alone (`scheme://host[:port]`: a gateway's path or query may hold a token).
"""

from __future__ import annotations

import datetime as dt
import email.utils
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import openai
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolUnionParam

from governance.core import Clock, SystemClock
from harness._errors import ProviderError
from harness.providers._base import (
    Message,
    ModelTurn,
    ProposedCall,
    ProviderIdentity,
    ToolSpec,
    Usage,
)
from harness.providers._endpoint import endpoint_origin, scrub_endpoint
from harness.providers._schema import ToolNameCodec
from harness.providers._settings import ProviderSettings
from harness.providers._wire import request_body

__all__ = ["OpenAIProvider"]

_BACKOFF_BASE = 1.0
_DETAIL_LIMIT = 500
# Headers the SDK fills from OPENAI_ORG_ID / OPENAI_PROJECT_ID: never sent to a third-party vendor.
_SUPPRESSED_HEADERS: Mapping[str, str | openai.Omit] = {
    "OpenAI-Organization": openai.omit,
    "OpenAI-Project": openai.omit,
}


class OpenAIProvider:
    """A `Provider` backed by an OpenAI-compatible endpoint.

    `http_client` (an `httpx2.Client`) is injected by tests and stays the caller's to close;
    `sleep` and `clock` make the retry policy observable without waiting.
    """

    def __init__(
        self,
        settings: ProviderSettings,
        *,
        http_client: Any | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Clock | None = None,
    ) -> None:
        self._settings = settings
        self._sleep = sleep
        self._clock: Clock = clock or SystemClock()
        self._owns_http_client = http_client is None
        self._client = openai.OpenAI(
            api_key=settings.api_key,
            base_url=settings.base_url,
            timeout=settings.timeout,
            max_retries=0,
            http_client=http_client,
        )

    @property
    def identity(self) -> ProviderIdentity:
        return ProviderIdentity(
            name=self._settings.provider_name, model=self._settings.model, live=True
        )

    def close(self) -> None:
        """Close the HTTP client if this provider created it."""
        if self._owns_http_client:
            self._client.close()

    def __enter__(self) -> OpenAIProvider:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        body, codec = self.request(messages, tools)
        attempt = 0
        while True:
            outcome = self._attempt(body["messages"], body.get("tools", []))
            if not isinstance(outcome, _Failure):
                return _decode_turn(outcome, codec)
            if not outcome.retryable or attempt >= self._settings.max_retries:
                raise outcome.error
            self._sleep(self._delay(attempt, outcome.retry_after))
            attempt += 1

    def request(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> tuple[dict[str, Any], ToolNameCodec]:
        """The JSON body this provider sends for `messages` and `tools` (what a cassette keeps),
        and the codec mapping the vendor's tool names back. Raises ProviderError."""
        try:
            return request_body(self._settings.model, messages, tools)
        except ValueError as exc:
            raise ProviderError(
                "bad_request", self._scrub(f"cannot offer the tools to the vendor: {exc}")
            ) from None

    def _attempt(
        self, wire_messages: list[dict[str, Any]], wire_tools: list[dict[str, Any]]
    ) -> object:
        """One request: the SDK's (unvalidated) completion object, or a classified failure."""
        # An empty `tools` list is rejected by OpenAI ("[] is too short"): omit it instead.
        offered = cast(list[ChatCompletionToolUnionParam], wire_tools) if wire_tools else None
        try:
            return self._client.chat.completions.create(
                model=self._settings.model,
                messages=cast(list[ChatCompletionMessageParam], wire_messages),
                tools=offered if offered is not None else openai.omit,
                extra_headers=_SUPPRESSED_HEADERS,
            )
        except openai.APITimeoutError:
            # A subclass of APIConnectionError, so it is caught first. Never retried.
            return _Failure(
                ProviderError(
                    "timeout",
                    self._scrub(
                        f"{self._where()} did not answer within {self._settings.timeout:g} s "
                        "(timeouts are not retried)"
                    ),
                ),
                retryable=False,
            )
        except openai.APIConnectionError as exc:
            cause = exc.__cause__
            detail = f"{type(cause).__name__}: {cause}" if cause is not None else exc.message
            return _Failure(
                ProviderError("connection", self._scrub(f"cannot reach {self._where()}: {detail}")),
                retryable=True,
            )
        except openai.APIStatusError as exc:
            return self._status_failure(exc)
        except openai.APIResponseValidationError as exc:
            return _Failure(
                ProviderError(
                    "malformed_response",
                    self._scrub(f"{self._where()} sent a response the SDK rejected: {exc.message}"),
                    status=exc.status_code,
                ),
                retryable=False,
            )
        except openai.OpenAIError as exc:
            return _Failure(
                ProviderError(
                    "bad_request",
                    self._scrub(f"the openai SDK refused the request: {type(exc).__name__}: {exc}"),
                ),
                retryable=False,
            )

    def _status_failure(self, exc: openai.APIStatusError) -> _Failure:
        status = exc.status_code
        detail = _truncate(self._scrub(exc.message))
        where = self._where()
        retry_after = _retry_after(exc.response.headers, self._clock)
        if status == 429:
            # An exhausted quota is also a 429; waiting will not refill it.
            quota = exc.code == "insufficient_quota"
            kind, retryable = "rate_limited", not quota
        elif status >= 500:
            kind, retryable = "server_error", True
        elif status in (401, 403):
            kind, retryable = "auth", False
        elif status == 404:
            kind, retryable = "not_found", False
        elif status == 408:
            kind, retryable = "timeout", False
        else:
            kind, retryable = "bad_request", False
        error = ProviderError(
            kind, self._scrub(f"{where} answered HTTP {status}: {detail}"), status=status
        )
        return _Failure(error, retryable=retryable, retry_after=retry_after)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number `attempt + 1`."""
        wanted = retry_after if retry_after is not None else _BACKOFF_BASE * 2.0**attempt
        return min(self._settings.max_backoff, wanted)

    def _where(self) -> str:
        # The origin only: a gateway's path or query may hold a token (`/gw/<token>/v1`).
        return f"{self._settings.provider_name} at {endpoint_origin(self._settings.base_url)}"

    def _scrub(self, text: str) -> str:
        """No key, and no part of the endpoint URL beyond its origin (an SDK or vendor message
        may quote the URL or the route it tried)."""
        key = self._settings.api_key
        text = text.replace(key, "***") if key else text
        return scrub_endpoint(text, self._settings.base_url)


class _Failure:
    """A failed attempt, classified: the error to raise and whether trying again may help."""

    __slots__ = ("error", "retry_after", "retryable")

    def __init__(
        self, error: ProviderError, *, retryable: bool, retry_after: float | None = None
    ) -> None:
        self.error = error
        self.retryable = retryable
        self.retry_after = retry_after


def _truncate(text: str) -> str:
    return text if len(text) <= _DETAIL_LIMIT else text[:_DETAIL_LIMIT] + "..."


def _retry_after(headers: Mapping[str, str], clock: Clock) -> float | None:
    """The wait a vendor asked for: `retry-after-ms`, or `Retry-After` in seconds or as a date.

    A date is measured against the response's own `Date` header when present (immune to local
    clock skew), else against the injected clock. Unusable values yield None.
    """
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        when = _http_date(raw)
        if when is None:
            return None
        sent = _http_date(headers.get("date", ""))
        now = sent if sent is not None else clock.now().timestamp()
        return max(0.0, when - now)
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _http_date(text: str) -> float | None:
    """An HTTP date as a POSIX timestamp; None when it is not one."""
    try:
        parsed = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:  # RFC 9110 dates are GMT
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.timestamp()


def _malformed(message: str) -> ProviderError:
    return ProviderError("malformed_response", message)


def _decode_turn(completion: object, codec: ToolNameCodec) -> ModelTurn:
    """A ModelTurn from an unvalidated SDK object; anything missing or mistyped is malformed.

    Tool-call arguments stay the raw string the vendor sent: the loop judges malformed JSON.
    """
    choices = getattr(completion, "choices", None)
    if not isinstance(choices, list):
        raise _malformed(f"the response has no 'choices' list (got {type(completion).__name__})")
    if not choices:
        raise _malformed("the response has an empty 'choices' list")
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        raise _malformed("choices[0] has no 'message'")
    content = getattr(message, "content", None)
    if content is not None and not isinstance(content, str):
        raise _malformed(f"message.content is {type(content).__name__}, not a string")
    finish_reason = getattr(choice, "finish_reason", None)
    if finish_reason is not None and not isinstance(finish_reason, str):
        raise _malformed(f"finish_reason is {type(finish_reason).__name__}, not a string")

    raw_calls = getattr(message, "tool_calls", None)
    if raw_calls is None:
        raw_calls = []
    if not isinstance(raw_calls, list):
        raise _malformed(f"message.tool_calls is {type(raw_calls).__name__}, not a list")
    calls: list[ProposedCall] = []
    for index, raw in enumerate(raw_calls):
        call_id = getattr(raw, "id", None)
        function = getattr(raw, "function", None)
        name = getattr(function, "name", None)
        arguments = getattr(function, "arguments", None)
        if not isinstance(call_id, str) or not call_id:
            raise _malformed(f"tool_calls[{index}] has no string 'id'")
        if not isinstance(name, str) or not name:
            raise _malformed(f"tool_calls[{index}] has no function name (only function calls)")
        if not isinstance(arguments, str):
            raise _malformed(
                f"tool_calls[{index}].function.arguments is {type(arguments).__name__}, "
                "not the JSON string the API defines"
            )
        calls.append(ProposedCall(id=call_id, name=codec.decode(name), arguments=arguments))

    return ModelTurn(
        text=content,
        tool_calls=tuple(calls),
        usage=_decode_usage(getattr(completion, "usage", None)),
        finish_reason=finish_reason,
    )


def _decode_usage(usage: object) -> Usage | None:
    if usage is None:
        return None
    counts = []
    for field in ("prompt_tokens", "completion_tokens"):
        value = getattr(usage, field, None)
        # Token counts feed budgets: a present-but-broken usage is refused, not guessed.
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _malformed(f"usage.{field} is {value!r}, not a count")
        counts.append(value)
    return Usage(prompt_tokens=counts[0], completion_tokens=counts[1])
