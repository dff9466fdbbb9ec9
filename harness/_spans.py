"""Trace spans: one tagged union that says what a run did, step by step.

No wall-clock time or duration anywhere: a replay run must produce byte-identical spans.
Ids are sequential (`s1`, `s2`, ...). Results are stored as digests. Every free-text field a
model, a tool or a provider wrote (arguments, texts, errors, details) is redacted by the span
type itself, so no code path can put a secret into a trace, a report or CLI output.
Redaction is idempotent, so a trace read back from disk validates to the same bytes.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from governance import Effect, Outcome, redact
from governance.screening import ClaimsMode, FindingKind, redact_text
from harness.providers._base import ProposedCall


def redact_arguments_text(raw: str) -> str:
    """A proposed call's raw argument text with its secrets masked; unchanged when it has none.

    Valid JSON is redacted by structure too (a value under a `password` key, a token behind a
    `\\u` escape), then written back as JSON; anything else is redacted as text.
    """
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # too deep to parse: redacted as text
        return redact_text(raw)
    masked = redact(value)
    if masked == value:
        return redact_text(raw)
    return json.dumps(masked, ensure_ascii=False)


def _redact_mapping(value: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if value is None else redact(value)


Redacted = Annotated[str, AfterValidator(redact_text)]

# How much of a tool's result a trace keeps to show (report.html): redacted whole, then cut,
# so a secret straddling the cut is masked before it could be half-kept.
RESULT_SHOWN_CHARS = 2000
RESULT_CUT_MARK = " [...]"


def _redact_then_cap(value: str | None) -> str | None:
    if value is None:
        return None
    shown = redact_text(value)
    if len(shown) <= RESULT_SHOWN_CHARS:
        return shown
    return shown[:RESULT_SHOWN_CHARS] + RESULT_CUT_MARK
"""Free text that may quote a secret: stored masked."""


class _Span(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    step: int


class UsageRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ModelTurnSpan(_Span):
    kind: Literal["model_turn"] = "model_turn"
    text: Redacted | None
    tool_calls: list[ProposedCall] = Field(description="Arguments text redacted.")
    usage: UsageRecord | None
    finish_reason: str | None

    @field_validator("tool_calls")
    @classmethod
    def _redact_arguments(cls, calls: list[ProposedCall]) -> list[ProposedCall]:
        # Records stay raw where a call still has to run (RunState.pending_calls), not here.
        return [
            dataclasses.replace(call, arguments=redact_arguments_text(call.arguments))
            for call in calls
        ]


ToolCallOutcome = Outcome | Literal["not_run"]


class ToolCallSpan(_Span):
    kind: Literal["tool_call"] = "tool_call"
    call_id: str
    provider_call_id: str
    tool: str
    known_tool: bool
    arguments: Annotated[dict[str, Any] | None, AfterValidator(_redact_mapping)] = Field(
        description="Redacted; None when not valid JSON."
    )
    effect: Effect | None = Field(description="The policy decision; None when none was made.")
    rule_ids: list[str]
    reason: str | None
    outcome: ToolCallOutcome
    approval_id: str | None = None
    result_digest: str | None = None
    result_chars: int = 0
    truncated: bool = False
    result: Annotated[str | None, AfterValidator(_redact_then_cap)] = Field(
        default=None,
        description="An executed call's result as the model saw it, redacted, then cut to "
        f"{RESULT_SHOWN_CHARS} characters; None for a call that did not execute.",
    )
    error: Redacted | None = None
    matched_rules: list[str] = Field(
        default_factory=list, description="Every rule that applied to the call."
    )
    decisive_rules: list[str] = Field(
        default_factory=list,
        description="Rules without which the decision's effect or reason would differ.",
    )
    decisive_conditions: list[str] = Field(
        default_factory=list,
        description="`<rule>.when[<i>]:held|failed`: conditions that alone decided whether "
        "their rule applied.",
    )


LoopEvent = Literal[
    "malformed_arguments",
    "repeated_call",
    "max_steps",
    "provider_error",
    "not_run_after_stop",
    "resumed",
]


class LoopSpan(_Span):
    kind: Literal["loop"] = "loop"
    event: LoopEvent
    detail: Redacted


class ApprovalSpan(_Span):
    kind: Literal["approval"] = "approval"
    approval_id: str
    call_id: str
    tool: str
    status: str
    decided_by: str | None = None
    edited: bool = False
    detail: Redacted = ""


class GuardrailSpan(_Span):
    kind: Literal["guardrail"] = "guardrail"
    stage: Literal["input", "tool_output", "answer"]
    verdict: Literal["pass", "flagged", "rejected"]
    findings: list[str]
    call_id: str | None = None


class ClaimFindingRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: FindingKind
    claim: Redacted = Field(description="The answer's words.")
    detail: Redacted = Field(description="What the run's evidence says instead.")


class ClaimsSpan(_Span):
    """The final answer's claims checked against the run's evidence (governance.screening).

    Recorded whenever the answer states an identifier or an action; `mode` is what the loop
    did with a flagged answer (annotate, replace), so the final answer can be re-derived."""

    kind: Literal["claims"] = "claims"
    verdict: Literal["pass", "flagged"]
    mode: ClaimsMode
    identifiers: int = Field(description="Identifiers the answer states.")
    actions: int = Field(description="Action claims the answer makes (done or not done).")
    findings: list[ClaimFindingRecord]


Span = Annotated[
    ModelTurnSpan | ToolCallSpan | LoopSpan | ApprovalSpan | GuardrailSpan | ClaimsSpan,
    Field(discriminator="kind"),
]
