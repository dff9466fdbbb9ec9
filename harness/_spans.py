"""Trace spans: one tagged union that says what a run did, step by step.

No wall-clock time or duration anywhere: a replay run must produce byte-identical spans.
Ids are sequential (`s1`, `s2`, ...). Arguments are stored redacted; results as digests.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from governance import Effect, Outcome


class _Span(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    step: int


class ProposedCallRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    name: str
    arguments: str


class UsageRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ModelTurnSpan(_Span):
    kind: Literal["model_turn"] = "model_turn"
    text: str | None
    tool_calls: list[ProposedCallRecord]
    usage: UsageRecord | None
    finish_reason: str | None


ToolCallOutcome = Outcome | Literal["not_run"]


class ToolCallSpan(_Span):
    kind: Literal["tool_call"] = "tool_call"
    call_id: str
    provider_call_id: str
    tool: str
    known_tool: bool
    arguments: dict[str, Any] | None = Field(description="Redacted; None when not valid JSON.")
    effect: Effect | None = Field(description="The policy decision; None when none was made.")
    rule_ids: list[str]
    reason: str | None
    outcome: ToolCallOutcome
    approval_id: str | None = None
    result_digest: str | None = None
    result_chars: int = 0
    truncated: bool = False
    error: str | None = None


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
    detail: str


class ApprovalSpan(_Span):
    kind: Literal["approval"] = "approval"
    approval_id: str
    call_id: str
    tool: str
    status: str
    decided_by: str | None = None
    edited: bool = False
    detail: str = ""


class GuardrailSpan(_Span):
    kind: Literal["guardrail"] = "guardrail"
    stage: Literal["input", "tool_output", "answer"]
    verdict: Literal["pass", "flagged", "rejected"]
    findings: list[str]
    call_id: str | None = None


Span = Annotated[
    ModelTurnSpan | ToolCallSpan | LoopSpan | ApprovalSpan | GuardrailSpan,
    Field(discriminator="kind"),
]
