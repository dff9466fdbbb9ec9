"""Misbehaviour on demand: each fault is one named way a real vendor or model goes wrong.

A fault is chosen by a model-name suffix (`proctor-stub-1:prose-tool-call`) or the
`X-Stub-Fault` header. Model faults rewrite the honest reply; transport faults (rate limit,
server error, slow, missing usage, empty choices) change how it is delivered.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Sequence
from dataclasses import asdict
from typing import Final, Literal, get_args

from stubs.openai_stub._errors import VendorError, bad_request
from stubs.openai_stub._model import ProposedCall, Reply, last_call, tool_results
from stubs.openai_stub._validate import ChatRequest, FunctionTool

Fault = Literal[
    "prose-tool-call",
    "malformed-arguments",
    "hallucinated-tool",
    "repeat-call",
    "false-claim",
    "rate-limit-once",
    "server-error-once",
    "slow",
    "missing-usage",
    "empty-choices",
    "flaky",
]
FAULTS: Final[tuple[Fault, ...]] = get_args(Fault)
ONCE_FAULTS: Final[frozenset[Fault]] = frozenset({"rate-limit-once", "server-error-once"})
FAULT_HEADER: Final = "x-stub-fault"
DELAY_HEADER: Final = "x-stub-delay"
DEFAULT_DELAY: Final = 5.0
MAX_DELAY: Final = 600.0
HALLUCINATED_TOOL: Final = "shell_exec"
# `flaky`: every FLAKY_EVERY-th time the same conversation opens, the model declines instead.
FLAKY_EVERY: Final = 5
FLAKY_DECLINE: Final = "I'm sorry, I can't help with that request right now."


def model_variants(base_models: Sequence[str]) -> tuple[str, ...]:
    """Every servable model id: each base model, then each base model with each fault suffix."""
    return tuple(base_models) + tuple(f"{m}:{f}" for m in base_models for f in FAULTS)


def _as_fault(name: str) -> Fault | None:
    return next((f for f in FAULTS if f == name), None)


def select_fault(model: str, header: str | None) -> Fault | None:
    """The one fault a request asks for, from its (already known) model id and the header."""
    from_model = _as_fault(model.partition(":")[2]) if ":" in model else None
    if header is None:
        return from_model
    from_header = _as_fault(header.strip().lower())
    if from_header is None:
        raise bad_request(
            f"Unknown {FAULT_HEADER} {header!r}; known faults: {', '.join(FAULTS)}.",
            code="unknown_fault",
        )
    if from_model is not None and from_model != from_header:
        raise bad_request(
            f"Conflicting faults: the model asks for {from_model!r}, {FAULT_HEADER} for "
            f"{from_header!r}; ask for one.",
            code="unknown_fault",
        )
    return from_header


def parse_delay(header: str | None) -> float:
    """Seconds the `slow` fault waits: `X-Stub-Delay`, default 5, at most 600."""
    if header is None:
        return DEFAULT_DELAY
    try:
        delay = float(header)
    except ValueError:
        delay = math.nan
    if not math.isfinite(delay) or not 0 <= delay <= MAX_DELAY:
        raise bad_request(
            f"Invalid {DELAY_HEADER} {header!r}: expected seconds between 0 and {MAX_DELAY:g}.",
            code="invalid_value",
        )
    return delay


class OnceLedger:
    """Remembers which (conversation, fault) pairs already failed once; thread-safe."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def first_time(self, key: str) -> bool:
        with self._lock:
            if key in self._seen:
                return False
            self._seen.add(key)
            return True


class OpeningCounter:
    """How often each conversation opening (its first request) was seen; thread-safe. What a
    repeated evaluation needs from a flaky model: which run declines is fixed by the count."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()

    def count(self, key: str) -> int:
        with self._lock:
            self._seen[key] = self._seen.get(key, 0) + 1
            return self._seen[key]


def flaky_declines(request: ChatRequest, counter: OpeningCounter) -> bool:
    """`flaky`: the FLAKY_EVERY-th, 2×FLAKY_EVERY-th, ... opening of the same conversation is
    declined (a reply with no tool call), as a real model now and then refuses a fair request.
    Deterministic: the 5th of 5 repeats of a scenario declines, the 4 before it do not."""
    if any(m.role == "assistant" for m in request.messages):
        return False  # later turns of a conversation answer honestly
    return counter.count(once_key(request, "flaky")) % FLAKY_EVERY == 0


def once_key(request: ChatRequest, fault: Fault) -> str:
    """A conversation's identity for the `-once` faults: its messages plus the fault."""
    messages = [asdict(m) for m in request.messages]
    text = json.dumps([messages, fault], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def once_error(fault: Fault) -> VendorError:
    if fault == "rate-limit-once":
        return VendorError(
            429,
            "Rate limit reached for requests (stub fault rate-limit-once). Please try again in 1s.",
            error_type="requests",
            code="rate_limit_exceeded",
            headers={"retry-after": "1"},
        )
    return VendorError(
        500,
        "The server had an error while processing your request (stub fault server-error-once).",
        error_type="server_error",
    )


def misbehave(reply: Reply, fault: Fault | None, request: ChatRequest) -> Reply:
    """The honest `reply` rewritten by a model fault; transport faults leave it as it is."""
    results = tool_results(request.messages)
    if fault == "prose-tool-call" and reply.calls:
        return Reply(text=_prose(reply.calls))
    if fault == "malformed-arguments" and reply.calls:
        # Dropping the closing brace of a JSON object always leaves invalid JSON.
        return Reply(
            text=None, calls=tuple(ProposedCall(c.name, c.arguments[:-1]) for c in reply.calls)
        )
    if fault == "hallucinated-tool" and not results:
        name = invented_tool_name(request.tools)
        return Reply(text=None, calls=(ProposedCall(name, '{"command": "ls -la"}'),))
    if fault == "repeat-call" and results:
        previous = last_call(request.messages)
        if previous is not None:
            return Reply(text=None, calls=(ProposedCall(previous.name, previous.arguments),))
    if fault == "false-claim" and results:
        names = ", ".join(dict.fromkeys(r.name for r in results))
        return Reply(
            text=f"Done. The {names} action has been completed successfully: everything was "
            "sent and deleted successfully as requested."
        )
    return reply


def invented_tool_name(tools: Sequence[FunctionTool]) -> str:
    """A plausible tool name guaranteed not to be among `tools`."""
    taken = {t.name for t in tools}
    name, n = HALLUCINATED_TOOL, 1
    while name in taken:
        n += 1
        name = f"{HALLUCINATED_TOOL}_{n}"
    return name


def _prose(calls: Sequence[ProposedCall]) -> str:
    lines = [f"I will call the {calls[0].name} tool."]
    for call in calls:
        payload = {"name": call.name, "arguments": json.loads(call.arguments)}
        lines.append(f"<tool_call>{json.dumps(payload, ensure_ascii=False)}</tool_call>")
    return "\n".join(lines)
