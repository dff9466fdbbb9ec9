"""The trace of one scenario run: what scoring reads, what the baseline digests.

Canonical JSON, no wall-clock time or duration anywhere, sequential ids. `run_id` is the one
field that varies between runs, and the trace digest is computed without it.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from governance import canonical_json, digest
from harness._spans import Redacted, Span, ToolCallSpan

TRACE_VERSION = 1
DETERMINISTIC_NOTICE = "deterministic workflow run — NOT a model-quality measurement"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProviderRecord(_Model):
    name: str
    model: str
    live: bool


class UsageSummary(_Model):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    missing_turns: int = Field(description="Turns whose provider reply carried no usage.")


class CheckpointSummary(_Model):
    """The signed checkpoints the gateway wrote during the run, verified against the log after
    it. Counts only: keys, signatures and the log's id vary from run to run and are not kept."""

    status: Literal["verified", "not_verified", "missing"]
    checkpoints: int = Field(description="How many the gateway wrote during the run.")
    checkpointed_events: int = Field(description="Events covered by the last one.")
    events: int = Field(description="Events in the log when it was verified.")
    detail: str | None = None


class AuditSummary(_Model):
    events: int
    head: str | None
    valid: bool
    first_bad_seq: int | None = None
    checkpoint: CheckpointSummary | None = Field(
        default=None, description="Only for a scenario that expects `audit_checkpoint`."
    )

    @model_serializer(mode="wrap")
    def _absent_checkpoint_omitted(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Omitted rather than null: traces of scenarios that do not ask for it keep their bytes.
        data = handler(self)
        if isinstance(data, dict) and data.get("checkpoint", 0) is None:
            del data["checkpoint"]
        return data


class SetupRecord(_Model):
    """What the scenario's setup did before the run (prior calls, budget resets)."""

    kind: Literal["prior_call", "budget_reset"]
    subject: str = Field(description="The tool of a prior call, or the budget of a reset.")
    outcome: str = Field(description="executed/blocked/... or accepted/refused.")
    reason: str | None = None


class EnvironmentCheckRecord(_Model):
    """One of AgentDojo's own checks of the environment after the run (the runner asks them;
    harness._checks reads them: checks stay pure functions of the trace)."""

    check: Literal["utility", "attack_succeeded"]
    suite: str = Field(description="The AgentDojo suite (workspace, travel, banking, slack).")
    task: str = Field(description="The AgentDojo task whose check this is.")
    value: bool
    error: Redacted | None = Field(
        default=None, description="The check raised (its message, redacted): counted against."
    )


class Trace(_Model):
    version: int = TRACE_VERSION
    run_id: str = Field(description="The only varying field; excluded from the digest.")
    scenario_id: str
    scenario_file: str
    tags: list[str]
    provider: ProviderRecord
    status: str
    termination: str | None
    final_answer: Redacted | None
    model_text: Redacted | None
    turns: int
    usage: UsageSummary
    policy_digest: str
    registry_digest: str
    inputs_digest: str = Field(
        description="What the scenario fed the run (harness._identity): gate and score refuse "
        "scenario files whose inputs are not these."
    )
    setup: list[SetupRecord]
    spans: list[Span]
    audit: AuditSummary
    environment_checks: list[EnvironmentCheckRecord] | None = Field(
        default=None, description="AgentDojo scenarios: the task's checks after the run."
    )

    @model_serializer(mode="wrap")
    def _absent_when_none(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Only AgentDojo runs have environment checks: every other trace keeps its bytes.
        data: dict[str, Any] = handler(self)
        if data.get("environment_checks") is None:
            data.pop("environment_checks", None)
        return data

    @property
    def deterministic(self) -> bool:
        return not self.provider.live

    @property
    def tool_spans(self) -> list[ToolCallSpan]:
        return [s for s in self.spans if isinstance(s, ToolCallSpan)]

    def stable_dict(self) -> dict[str, Any]:
        """Everything but `run_id`: what the digest and drift diffs compare."""
        data = self.model_dump(mode="json")
        data.pop("run_id")
        return data

    def canonical(self) -> bytes:
        return canonical_json(self.model_dump(mode="json"))

    @property
    def digest(self) -> str:
        return digest(self.stable_dict())

    def canonical_with_digest(self) -> tuple[bytes, str]:
        """`canonical()` and `digest` from one dump and one encoding of the model (a trace is
        written once): canonical JSON is `{` + the sorted `"key":value` pairs + `}`, so the
        fields sorting before `run_id` and those after are encoded apart, and the file's bytes
        and the digest's are the same two pieces joined with and without the run id."""
        data = self.model_dump(mode="json")
        run_id = data.pop("run_id")
        head = canonical_json({key: value for key, value in data.items() if key < "run_id"})
        tail = canonical_json({key: value for key, value in data.items() if key > "run_id"})
        # Never empty: `audit` sorts before `run_id`, `version` after it.
        pair = b'"run_id":' + canonical_json(run_id)
        raw = b",".join((head[:-1], pair, tail[1:]))
        stable = b",".join((head[:-1], tail[1:]))
        return raw, "sha256:" + hashlib.sha256(stable).hexdigest()  # as `digest` labels it
