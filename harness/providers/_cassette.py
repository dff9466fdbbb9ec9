"""Cassettes: a live run's provider exchanges kept per scenario, replayed with no network.

`RecordingProvider` wraps a live provider and keeps every exchange of a scenario (the request
body, canonicalised, and the reply or error the loop got); with `fill_gaps` it first replays
what the scenario's cassette already holds and asks the live provider only for the turns
beyond it. `CassetteProvider` answers from the cassette alone: it has no HTTP client and never
imports the openai SDK. A request that differs from the recorded one, or a turn the cassette
does not have, is a `cassette_miss` provider error naming the scenario, the turn and a diff of
the request: never a silent fall back to the network.

Canonical request: the body the live provider hands the SDK (`_wire.request_body`), with the
conversation content (message texts, tool-call arguments, tool results) masked by Proctor's
redactor (`governance.redact`) and the API key cut out wherever it appears; the model, the tool
definitions and the request parameters are kept verbatim. Headers (Authorization,
organisation, project) and the URL are never part of it. The request being compared is
canonicalised the same way, so a masked secret still matches itself.

Limits, by choice: (1) a change confined to a masked span (one secret for another) is not a
miss: the cassette keeps nothing derived from a masked secret, not even a digest, because
cassettes are committed and a digest (salted or not, the salt would sit in the file) lets
anyone check guesses of a low-entropy secret offline. (2) A replay does not know the key, so
where the recording cut it, it takes the text at that spot of its own request (8+ non-space
characters, in message texts and tool-call arguments only, one key per scenario) for the key.
A hand-edited mask there matches any such text; whoever can edit a cassette can edit its
replies too, so cassettes are reviewed like code.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from governance import redact
from harness._errors import ProviderError
from harness.providers._base import (
    Message,
    ModelTurn,
    ProposedCall,
    Provider,
    ProviderIdentity,
    ToolSpec,
    Usage,
)
from harness.providers._cassette_file import (
    CassetteDir,
    CassetteFile,
    Exchange,
    RecordedError,
    RecordedReply,
    cassette_path,
    load_cassette,
    pretty_json,
    write_cassette,
)
from harness.providers._credential import KEY_MASK, MIN_KEY_CHARS, cut_key, cuttable_keys
from harness.providers._endpoint import endpoint_host
from harness.providers._wire import request_body

__all__ = [
    "CASSETTE_MISS",
    "CassetteProvider",
    "RecordingProvider",
    "canonical_request",
    "endpoint_host",
    "request_diff",
]

CASSETTE_MISS = "cassette_miss"
_DIFF_LINES = 120


def canonical_request(body: dict[str, Any], *, secrets: Sequence[str] = ()) -> dict[str, Any]:
    """`body` as a cassette stores and compares it, JSON types only (what a file read back gives).

    Only conversation content is redacted: each message's text, each tool call's arguments
    (tool results are messages too). The model, the tool definitions and every request parameter
    are Proctor's own text and are compared verbatim, so a changed tool schema misses even under
    a secret-sounding property name. The run's own key (`secrets`) is cut everywhere."""
    out = dict(body)
    messages = body.get("messages")
    if isinstance(messages, list):
        out["messages"] = [_redacted_message(message) for message in messages]
    result: dict[str, Any] = json.loads(json.dumps(cut_key(out, cuttable_keys(*secrets))))
    return result


def _redacted_message(message: Any) -> Any:
    if not isinstance(message, dict):
        return message
    out = dict(message)
    if out.get("content") is not None:
        out["content"] = redact(out["content"])
    calls = out.get("tool_calls")
    if isinstance(calls, list):
        out["tool_calls"] = [_redacted_call(call) for call in calls]
    return out


def _redacted_call(call: Any) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or "arguments" not in function:
        return call
    return {**call, "function": {**function, "arguments": redact(function["arguments"])}}


def _content_slots(request: dict[str, Any]) -> dict[tuple[int, ...], str]:
    """The texts of a request where a recording may have cut the key: message texts (plain or
    as text parts) and tool-call arguments, by position. Nowhere else: a mask a tampered file
    puts in the tools, the model or a role never stands for the key."""
    slots: dict[tuple[int, ...], str] = {}
    messages = request.get("messages")
    for i, message in enumerate(messages if isinstance(messages, list) else []):
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, str):
            slots[(i, 0)] = content
        elif isinstance(content, list):
            for j, part in enumerate(content):
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    slots[(i, 1, j)] = part["text"]
        calls = message.get("tool_calls")
        for j, call in enumerate(calls if isinstance(calls, list) else []):
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                slots[(i, 2, j)] = function["arguments"]
    return slots


_KEY_SLOT = re.escape(KEY_MASK)
# What can stand where the key was cut: a key's characters, at least a key's length.
_KEY_TEXT = rf"(\S{{{MIN_KEY_CHARS},}}?)"


def _keys_at_slots(recorded: dict[str, Any], current: dict[str, Any]) -> set[str]:
    """The texts of `current` standing where `recorded` has the key cut out (same slot, same
    text around them): what the recording's key was, found without knowing it."""
    found: set[str] = set()
    now = _content_slots(current)
    for where, text in _content_slots(recorded).items():
        mine = now.get(where)
        if mine is None or KEY_MASK not in text or KEY_MASK in mine:
            continue
        pattern = _KEY_SLOT.join(re.escape(part) for part in text.split(KEY_MASK))
        match = re.fullmatch(pattern.replace(_KEY_SLOT, _KEY_TEXT), mine)
        if match is not None:
            found.update(g for g in match.groups() if g)
    return found



def request_diff(recorded: dict[str, Any], current: dict[str, Any], turn: int) -> str:
    """A unified diff of the two canonical requests, as readable JSON; long diffs are cut."""
    lines = list(
        difflib.unified_diff(
            pretty_json(recorded).splitlines(),
            pretty_json(current).splitlines(),
            fromfile=f"recorded request, turn {turn}",
            tofile=f"this run's request, turn {turn}",
            lineterm="",
        )
    )
    if len(lines) > _DIFF_LINES:
        lines = [*lines[:_DIFF_LINES], f"... ({len(lines) - _DIFF_LINES} more diff lines)"]
    return "\n".join(lines)


def _reply_of(turn: ModelTurn, keys: list[str]) -> RecordedReply:
    data = {
        "text": turn.text,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in turn.tool_calls
        ],
        "finish_reason": turn.finish_reason,
        "usage": None
        if turn.usage is None
        else {
            "prompt_tokens": turn.usage.prompt_tokens,
            "completion_tokens": turn.usage.completion_tokens,
        },
    }
    # Call ids are kept (redaction leaves identifiers alone); texts and arguments are masked.
    return RecordedReply.model_validate(cut_key(redact(data), keys))


def _turn_of(reply: RecordedReply) -> ModelTurn:
    return ModelTurn(
        text=reply.text,
        tool_calls=tuple(ProposedCall(c.id, c.name, c.arguments) for c in reply.tool_calls),
        usage=None
        if reply.usage is None
        else Usage(reply.usage.prompt_tokens, reply.usage.completion_tokens),
        finish_reason=reply.finish_reason,
    )


def _answer(exchange: Exchange) -> ModelTurn:
    if exchange.error is not None:
        error = exchange.error
        raise ProviderError(error.kind, error.message, status=error.status)
    assert exchange.reply is not None  # an exchange holds one of the two (validated)
    return _turn_of(exchange.reply)


class _Tape:
    """A scenario's recorded exchanges and the position of the next turn."""

    def __init__(self, directory: Path, scenario_id: str, *, read: bool = True) -> None:
        self.path = cassette_path(directory, scenario_id)
        self.scenario_id = scenario_id
        # A fresh recording never reads the old file: a damaged or other-version one is replaced.
        self.cassette = load_cassette(self.path, scenario_id) if read else None
        self.turn = 0  # turns asked so far
        self.keys: list[str] = []  # the key's text, as found where the recording cut it

    @property
    def recorded(self) -> list[Exchange]:
        return [] if self.cassette is None else self.cassette.exchanges

    def matching(self, request: dict[str, Any]) -> Exchange | None:
        """The recorded exchange of the next turn when its request is `request`; None when
        the cassette ends before it; a cassette_miss error when the request differs."""
        self.turn += 1
        recorded = self.recorded
        if self.turn > len(recorded):
            return None
        expected = recorded[self.turn - 1]
        # A run has one key: the first text found at a cut slot is taken for it; a slot that
        # holds another text stays as it is and misses.
        for found in sorted(_keys_at_slots(expected.request, request)):
            if not self.keys:
                self.keys.append(found)
        request = cut_key(request, self.keys)
        if expected.request != request:
            raise self.miss(
                "the request differs from the recorded one (the loop, the tools or the prompt "
                "changed); record the cassette again (--record DIR)\n"
                + request_diff(expected.request, request, self.turn)
            )
        return expected

    def miss(self, why: str) -> ProviderError:
        return ProviderError(
            CASSETTE_MISS,
            f"scenario {self.scenario_id}, turn {self.turn}, cassette {self.path}: {why}",
        )


class CassetteProvider:
    """Answers each turn from the scenario's cassette; no network, no SDK. Its identity says
    which cassette (`cassette:NAME`) and which model originally answered."""

    def __init__(self, directory: Path, scenario_id: str) -> None:
        self._tape = _Tape(directory, scenario_id)
        cassette = self._tape.cassette
        self._identity = ProviderIdentity(
            name=f"cassette:{CassetteDir(directory).name}",
            model=cassette.model if cassette is not None else "none (no cassette)",
            live=False,
        )

    @property
    def identity(self) -> ProviderIdentity:
        return self._identity

    @property
    def keys(self) -> list[str]:
        """The run's API key as found where the recording cut it (empty until it is found):
        the runner cuts it from the trace as a live run cuts its own."""
        return list(self._tape.keys)

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        cassette = self._tape.cassette
        model = cassette.model if cassette is not None else ""
        try:
            body, _ = request_body(model, messages, tools)
        except ValueError as exc:
            raise ProviderError("bad_request", f"cannot offer the tools: {exc}") from None
        exchange = self._tape.matching(canonical_request(body))
        if exchange is None:
            if cassette is None:
                raise self._tape.miss(
                    "there is no cassette file for this scenario; record it (--record DIR, or "
                    "--record DIR --record-missing to keep the other scenarios' files)"
                )
            raise self._tape.miss(
                f"the cassette has {len(self._tape.recorded)} recorded turns and the run asked "
                "for another (the loop, the tools or the prompt changed); record it again "
                "(--record DIR --record-missing fills only the turns beyond)"
            )
        return _answer(exchange)


class RecordingProvider:
    """A live provider whose exchanges are kept in the scenario's cassette as they happen.

    Without `fill_gaps` the scenario's cassette is started afresh. With it, the turns the
    cassette holds are replayed (their requests must match, as in a replay) and only the turns
    beyond are asked of the live provider and appended; a matching exchange is never recorded
    again. The file is rewritten whole after each new exchange (atomically)."""

    def __init__(
        self,
        live: Provider,
        *,
        directory: Path,
        scenario_id: str,
        model: str,
        base_url: str,
        api_key: str,
        fill_gaps: bool,
    ) -> None:
        self._live = live
        self._request_of = getattr(live, "request", None)
        self._tape = _Tape(directory, scenario_id, read=fill_gaps)
        self._secrets = cuttable_keys(api_key)
        self._model = model
        self._host = endpoint_host(base_url)
        if not fill_gaps:
            self._tape.path.unlink(missing_ok=True)  # a run that asks nothing leaves no stale file

    @property
    def identity(self) -> ProviderIdentity:
        return self._live.identity

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        if self._request_of is not None:
            body, _ = self._request_of(messages, tools)
        else:
            try:
                body, _ = request_body(self._model, messages, tools)
            except ValueError as exc:
                raise ProviderError("bad_request", f"cannot offer the tools: {exc}") from None
        request = canonical_request(body, secrets=self._secrets)
        exchange = self._tape.matching(request)
        if exchange is not None:
            return _answer(exchange)
        try:
            turn = self._live.complete(messages, tools)
        except ProviderError as exc:
            message = cut_key(redact(exc.message), self._secrets)
            self._append(
                Exchange(
                    request=request,
                    error=RecordedError(kind=exc.kind, message=message, status=exc.status),
                )
            )
            raise
        self._append(Exchange(request=request, reply=_reply_of(turn, self._secrets)))
        # The live loop reads the reply as it came (a policy judges the real arguments); only
        # a reply that quotes a secret replays differently: masked, as the cassette keeps it.
        return turn

    def _append(self, exchange: Exchange) -> None:
        tape = self._tape
        cassette = tape.cassette or CassetteFile(
            format="proctor-cassette/1",
            scenario=tape.scenario_id,
            model=self._model,
            endpoint_host=self._host,
            exchanges=[],
        )
        cassette = cassette.model_copy(update={"exchanges": [*cassette.exchanges, exchange]})
        write_cassette(tape.path, cassette)
        tape.cassette = cassette
