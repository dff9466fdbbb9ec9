"""Replies on the wire: ChatCompletion bodies and ChatCompletionChunk SSE events.

Everything is derived from the request digest, with a fixed `created`, so the same request
always gets byte-identical bytes back.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Final

from stubs.openai_stub._model import Reply, completion_tokens, prompt_tokens
from stubs.openai_stub._validate import ChatRequest

CREATED: Final = 1767225600  # 2026-01-01T00:00:00Z: fixed, so replies are reproducible
SYSTEM_FINGERPRINT: Final = "fp_proctor_stub"
OWNED_BY: Final = "proctor"
ARGUMENT_FRAGMENT: Final = 12  # characters of arguments per stream delta, to exercise joining
DONE: Final = b"data: [DONE]\n\n"


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def completion_id(request: ChatRequest) -> str:
    return "chatcmpl-" + request.digest[:29]


def call_id(request: ChatRequest, index: int) -> str:
    return "call_" + hashlib.sha256(f"{request.digest}:{index}".encode()).hexdigest()[:24]


def usage(request: ChatRequest, reply: Reply) -> dict[str, int]:
    prompt = prompt_tokens(request.messages)
    completion = completion_tokens(reply)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _message(request: ChatRequest, reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if reply.calls:
        message["tool_calls"] = [
            {
                "id": call_id(request, i),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for i, call in enumerate(reply.calls)
        ]
    return message


def completion_body(
    request: ChatRequest, reply: Reply, *, with_usage: bool = True, empty_choices: bool = False
) -> bytes:
    """A `chat.completion` object."""
    choices = (
        []
        if empty_choices
        else [
            {
                "index": 0,
                "message": _message(request, reply),
                "logprobs": None,
                "finish_reason": reply.finish_reason,
            }
        ]
    )
    body: dict[str, Any] = {
        "id": completion_id(request),
        "object": "chat.completion",
        "created": CREATED,
        "model": request.model,
        "system_fingerprint": SYSTEM_FINGERPRINT,
        "choices": choices,
    }
    if with_usage:
        body["usage"] = usage(request, reply)
    return dumps(body)


def _text_pieces(text: str) -> list[str]:
    pieces = re.findall(r"\s*\S+\s*", text)
    return pieces if "".join(pieces) == text and pieces else [text]


def _deltas(request: ChatRequest, reply: Reply) -> list[dict[str, Any]]:
    if not reply.calls:
        return [{"role": "assistant", "content": ""}] + [
            {"content": piece} for piece in _text_pieces(reply.text or "")
        ]
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": reply.text}]
    for i, call in enumerate(reply.calls):
        deltas.append(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": call_id(request, i),
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        for start in range(0, len(call.arguments), ARGUMENT_FRAGMENT):
            fragment = call.arguments[start : start + ARGUMENT_FRAGMENT]
            deltas.append({"tool_calls": [{"index": i, "function": {"arguments": fragment}}]})
    return deltas


def stream_events(
    request: ChatRequest, reply: Reply, *, with_usage: bool, empty_choices: bool = False
) -> list[bytes]:
    """SSE events: deltas, a finish chunk, an optional usage chunk, then `[DONE]`."""
    head = {
        "id": completion_id(request),
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": request.model,
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }
    chunks: list[dict[str, Any]] = []
    if empty_choices:
        chunks.append({**head, "choices": []})
    else:
        for delta in _deltas(request, reply):
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
            chunks.append({**head, "choices": [choice]})
        final = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": reply.finish_reason}
        chunks.append({**head, "choices": [final]})
    if with_usage:
        chunks.append({**head, "choices": [], "usage": usage(request, reply)})
    return [b"data: " + dumps(chunk) + b"\n\n" for chunk in chunks] + [DONE]


def models_body(model_ids: tuple[str, ...]) -> bytes:
    return dumps({"object": "list", "data": [model_entry(m) for m in model_ids]})


def model_entry(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": CREATED, "owned_by": OWNED_BY}
