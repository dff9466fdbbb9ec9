"""Hand-made traces for the scoring, gate and baseline tests: one builder, sensible defaults."""

from __future__ import annotations

from harness._spans import Span
from harness._trace import AuditSummary, ProviderRecord, SetupRecord, Trace, UsageSummary

ZERO_DIGEST = "sha256:" + "0" * 64


def make_trace(
    spans: list[Span] | None = None,
    *,
    sid: str = "s1",
    run_id: str = "run-1",
    scenario_file: str | None = None,
    status: str = "completed",
    termination: str | None = "answered",
    answer: str | None = "All done.",
    turns: int = 1,
    setup: list[SetupRecord] | None = None,
    audit: AuditSummary | None = None,
    inputs_digest: str = ZERO_DIGEST,
) -> Trace:
    return Trace(
        run_id=run_id,
        scenario_id=sid,
        scenario_file=scenario_file or f"scenarios/{sid}.yaml",
        tags=[],
        provider=ProviderRecord(name="replay", model="script", live=False),
        status=status,
        termination=termination,
        final_answer=answer,
        model_text=answer,
        turns=turns,
        usage=UsageSummary(prompt_tokens=0, completion_tokens=0, total_tokens=0, missing_turns=0),
        policy_digest=ZERO_DIGEST,
        registry_digest=ZERO_DIGEST,
        inputs_digest=inputs_digest,
        setup=setup or [],
        spans=spans or [],
        audit=audit or AuditSummary(events=2, head=None, valid=True),
    )
