"""The provider seam: the loop sends an OpenAI-format message list, gets one model turn back.

Messages are plain OpenAI chat-completions dicts (`role`, `content`, `tool_calls`,
`tool_call_id`), so a run is reconstructible from its transcript alone and a live vendor sees
exactly what a replay provider saw. Tool names on the wire are Proctor's namespaced names
(`fs.read`); a provider that talks to a vendor with stricter name rules encodes them itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import ConfigDict

Message = Mapping[str, Any]
ToolSpec = Mapping[str, Any]  # {"type": "function", "function": {name, description, parameters}}


@dataclass(frozen=True, slots=True)
class ProposedCall:
    """A tool call as proposed. `arguments` is the raw JSON text, so it may be malformed.

    One shape from the provider to the trace: a run's pending calls and a model turn's span
    hold it as it is (pydantic validates it as a dataclass, no unknown keys)."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """One reply: text, proposed tool calls, or both. `usage` is None when the vendor sent none."""

    text: str | None
    tool_calls: tuple[ProposedCall, ...] = ()
    usage: Usage | None = None
    finish_reason: str | None = None


@dataclass(frozen=True, slots=True)
class ProviderIdentity:
    """Recorded in every trace: which provider produced it, which model, and whether it was live."""

    name: str
    model: str
    live: bool


class Provider(Protocol):
    """Decides the next turn from the whole transcript. Raises ProviderError, nothing else."""

    @property
    def identity(self) -> ProviderIdentity: ...

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn: ...
