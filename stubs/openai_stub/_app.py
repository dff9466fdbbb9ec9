"""The Starlette app: `/v1/models` and `/v1/chat/completions`, with OpenAI-shaped errors."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from collections.abc import AsyncIterator, Sequence
from typing import Final

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from stubs.openai_stub._errors import VendorError
from stubs.openai_stub._faults import (
    DELAY_HEADER,
    FAULT_HEADER,
    FLAKY_DECLINE,
    ONCE_FAULTS,
    OnceLedger,
    OpeningCounter,
    flaky_declines,
    misbehave,
    model_variants,
    once_error,
    once_key,
    parse_delay,
    select_fault,
)
from stubs.openai_stub._model import Reply, respond
from stubs.openai_stub._validate import parse_request
from stubs.openai_stub._wire import completion_body, dumps, model_entry, models_body, stream_events

DEFAULT_MODEL: Final = "proctor-stub-1"
_MISSING_KEY = (
    "You didn't provide an API key. You need to provide your API key in an Authorization header "
    "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY). The stub accepts any non-empty key."
)


def _json(status: int, body: bytes, headers: dict[str, str] | None = None) -> Response:
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def error_response(exc: VendorError) -> Response:
    return _json(exc.status, dumps(exc.payload()), exc.headers)


async def _vendor_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, VendorError)
    return error_response(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "unknown_url", 405: "method_not_allowed"}.get(exc.status_code)
    message = f"Unknown request URL: {request.method} {request.url.path}."
    if exc.status_code == 405:
        message = f"Method {request.method} is not allowed on {request.url.path}."
    return error_response(VendorError(exc.status_code, message, code=code))


async def _internal_error(request: Request, exc: Exception) -> Response:
    return error_response(
        VendorError(500, f"The stub failed: {type(exc).__name__}: {exc}", error_type="server_error")
    )


async def wait_unless_disconnected(request: Request, seconds: float) -> bool:
    """Sleep `seconds`; True if the client hung up first, so a timed-out client frees the stub."""

    async def hang_up() -> None:
        message = await request.receive()
        if message["type"] != "http.disconnect":
            await asyncio.Event().wait()  # nothing more to learn: let the sleep decide

    sleeper = asyncio.ensure_future(asyncio.sleep(seconds))
    watcher = asyncio.ensure_future(hang_up())
    done, pending = await asyncio.wait({sleeper, watcher}, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    return watcher in done


class _Stub:
    """The handlers, bound to one app's models and `-once` fault memory."""

    def __init__(self, base_models: Sequence[str], api_key_required: bool) -> None:
        self.model_ids = model_variants(base_models)
        self.api_key_required = api_key_required
        self.once = OnceLedger()
        self.openings = OpeningCounter()

    def _authorize(self, request: Request) -> None:
        if not self.api_key_required:
            return
        scheme, _, key = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise VendorError(401, _MISSING_KEY)

    async def list_models(self, request: Request) -> Response:
        self._authorize(request)
        return _json(200, models_body(self.model_ids))

    async def get_model(self, request: Request) -> Response:
        self._authorize(request)
        model = request.path_params["model"]
        if model not in self.model_ids:
            raise VendorError(
                404,
                f"The model `{model}` does not exist or you do not have access to it.",
                code="model_not_found",
            )
        return _json(200, dumps(model_entry(model)))

    async def chat(self, request: Request) -> Response:
        self._authorize(request)
        chat = parse_request(await request.body(), self.model_ids)
        fault = select_fault(chat.model, request.headers.get(FAULT_HEADER))
        # The fault is part of the request's identity: a faulty reply never shares an id.
        seed = f"{chat.digest}:{fault or ''}".encode()
        chat = dataclasses.replace(chat, digest=hashlib.sha256(seed).hexdigest())
        if fault in ONCE_FAULTS and self.once.first_time(once_key(chat, fault)):
            raise once_error(fault)
        if fault == "slow":
            delay = parse_delay(request.headers.get(DELAY_HEADER))
            if await wait_unless_disconnected(request, delay):
                return Response(status_code=499)  # nobody is listening any more
        if fault == "flaky" and flaky_declines(chat, self.openings):
            reply = Reply(text=FLAKY_DECLINE)
        else:
            reply = misbehave(respond(chat), fault, chat)
        with_usage = fault != "missing-usage"
        empty = fault == "empty-choices"
        if not chat.stream:
            return _json(
                200, completion_body(chat, reply, with_usage=with_usage, empty_choices=empty)
            )
        events = stream_events(
            chat, reply, with_usage=with_usage and chat.include_usage, empty_choices=empty
        )

        async def send() -> AsyncIterator[bytes]:
            for event in events:
                yield event

        return StreamingResponse(
            send(), media_type="text/event-stream", headers={"cache-control": "no-cache"}
        )


def create_app(
    *, models: Sequence[str] = (DEFAULT_MODEL,), api_key_required: bool = True
) -> Starlette:
    """The vendor stub as an ASGI app serving `models` plus every fault variant of each."""
    if isinstance(models, str) or not models:
        raise ValueError("models must be a non-empty sequence of model ids")
    for model in models:
        if not model or ":" in model:
            raise ValueError(f"bad model id {model!r}: ':' separates a model from a fault")
    stub = _Stub(tuple(dict.fromkeys(models)), api_key_required)
    routes = [
        Route("/v1/models", stub.list_models, methods=["GET"]),
        Route("/v1/models/{model:path}", stub.get_model, methods=["GET"]),
        Route("/v1/chat/completions", stub.chat, methods=["POST"]),
    ]
    return Starlette(
        routes=routes,
        exception_handlers={
            VendorError: _vendor_error,
            HTTPException: _http_error,
            Exception: _internal_error,
        },
    )
