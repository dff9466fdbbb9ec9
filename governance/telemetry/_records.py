"""What the hot path hands to telemetry: plain frozen values, turned into spans elsewhere."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


class ObservedEvent(Protocol):
    """A firewall lifecycle or run event (governance.LifecycleEvent), as telemetry reads it."""

    @property
    def kind(self) -> str: ...

    @property
    def run_id(self) -> str: ...

    @property
    def call_id(self) -> str: ...

    @property
    def tool(self) -> str: ...

    @property
    def data(self) -> Mapping[str, Any]: ...

    @property
    def at_ns(self) -> int: ...


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One `provider.complete()` of an agent loop: when, which model, how many tokens, how it
    ended. Never message content."""

    run_id: str
    started_ns: int  # time.time_ns() before provider.complete
    ended_ns: int  # after it returned or raised
    provider: str  # ProviderIdentity.name ("replay", "openai", ...)
    model: str
    live: bool
    input_tokens: int | None
    output_tokens: int | None
    finish_reason: str | None
    tool_calls: int  # how many calls the model proposed
    error_kind: str | None  # ProviderError.kind when it raised, else None


@dataclass(frozen=True, slots=True)
class RunFacts:
    """Attributes of a run the events do not carry (an eval run's scenario and run id), kept
    per run id until the run's next drive ends."""

    run_id: str
    attributes: tuple[tuple[str, str], ...]
    # What the run's trace and span ids derive from, when the run id alone is not unique: an
    # eval run's loop uses the scenario id as its run id (traces stay byte-identical), so each
    # suite run names its own trace with the suite run id beside it. None: the run id.
    trace_key: str | None = None


# What the hot path queues for the background thread.
Record = ObservedEvent | TurnRecord | RunFacts
