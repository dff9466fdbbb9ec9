"""Cassettes: a live run's provider exchanges kept per scenario, replayed with no network.

`RecordingProvider` wraps a live provider and keeps every exchange of a scenario (the request
body, canonicalised, and the reply or error the loop got); with `fill_gaps` it first replays
what the scenario's cassette already holds and asks the live provider only for the turns
beyond it. `CassetteProvider` answers from the cassette alone: it has no HTTP client and never
imports the openai SDK. A request that differs from the recorded one, or a turn the cassette
does not have, is a `cassette_miss` provider error naming the scenario, the turn and a diff of
the request: never a silent fall back to the network.

Canonical request: the body the live provider hands the SDK (`_wire.request_body`), then masked
by Proctor's redactor (`governance.redact`: secret shapes, secret-named keys, random runs) and
with the API key cut out wherever it appears. Headers (Authorization, organisation, project)
and the URL are never part of it. The request being compared is canonicalised the same way, so
a masked secret still matches itself.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

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
_MASK = "[REDACTED:api_key]"
# Where a recording cut the key, a replay (which knows no key) finds the text in the same place
# of its own request, takes it for the key and cuts it too: from then on, as in the recording.
_KEY_SLOT = re.escape(_MASK)
_DIFF_LINES = 120
# A key shorter than this is a placeholder (the stub's is "stub"): cutting it would mangle words
# such as the model name, and a replay, which knows no key, could never match again.
_MIN_SECRET = 8


def canonical_request(body: dict[str, Any], *, secrets: Sequence[str] = ()) -> dict[str, Any]:
    """`body` as a cassette stores and compares it: redacted, every `secrets` string cut out,
    JSON types only (what a file read back gives)."""
    masked = _cut(redact(body), [s for s in secrets if len(s) >= _MIN_SECRET])
    result: dict[str, Any] = json.loads(json.dumps(masked))
    return result


def _cut(value: Any, secrets: list[str]) -> Any:
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, _MASK)
        return value
    if isinstance(value, dict):
        return {_cut(k, secrets): _cut(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut(item, secrets) for item in value]
    return value


def _cut_keys(recorded: Any, current: Any) -> list[str]:
    """The texts of `current` standing where `recorded` has the key cut out (same structure,
    same text around them): what the recording's key was, found without knowing it."""
    if isinstance(recorded, str) and isinstance(current, str):
        if _MASK not in recorded or _MASK in current:
            return []
        pattern = _KEY_SLOT.join(re.escape(part) for part in recorded.split(_MASK))
        match = re.fullmatch(pattern.replace(_KEY_SLOT, rf"(\S{{{_MIN_SECRET},}}?)"), current)
        return [] if match is None else [g for g in match.groups() if g]
    if isinstance(recorded, dict) and isinstance(current, dict):
        return [
            k
            for key in recorded.keys() & current.keys()
            for k in _cut_keys(recorded[key], current[key])
        ]
    if isinstance(recorded, list) and isinstance(current, list) and len(recorded) == len(current):
        return [k for pair in zip(recorded, current, strict=True) for k in _cut_keys(*pair)]
    return []


def endpoint_host(base_url: str) -> str:
    """The host of an endpoint URL alone: no scheme, port, path, query or credentials (any of
    them may carry a token, and a stub's port changes with every run)."""
    return urlsplit(base_url).hostname or "unknown"


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


def _reply_of(turn: ModelTurn, secrets: list[str]) -> RecordedReply:
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
    return RecordedReply.model_validate(_cut(redact(data), secrets))


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

    def __init__(self, directory: Path, scenario_id: str) -> None:
        self.path = cassette_path(directory, scenario_id)
        self.scenario_id = scenario_id
        self.cassette = load_cassette(self.path, scenario_id)
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
        for found in _cut_keys(expected.request, request):
            if found not in self.keys:
                self.keys.append(found)
        request = _cut(request, self.keys)
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
        self._tape = _Tape(directory, scenario_id)
        self._secrets = [api_key] if len(api_key) >= _MIN_SECRET else []
        self._model = model
        self._host = endpoint_host(base_url)
        if not fill_gaps:
            self._tape.cassette = None
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
            message = _cut(redact(exc.message), self._secrets)
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
