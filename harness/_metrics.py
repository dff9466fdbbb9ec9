"""Gated metrics: every check kind counts towards exactly one metric (declared with the kind in
`harness._checks.CHECKS`).

A metric with no checks is absent (rate None), never 100%: a suite that stopped testing
something must not look perfect at it.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness._checks import METRIC_OF
from harness._errors import HarnessError
from harness._results import CheckResult, MetricResult

METRICS: tuple[str, ...] = (
    "tool_proposals",
    "tool_execution",
    "unsafe_execution",
    "governance_refusals",
    "blocking",
    "policy_evidence",
    "approval_flow",
    "budget_enforcement",
    "run_outcome",
    "termination",
    "answer_content",
    "guardrails",
    "claims",
    "audit_integrity",
    "contract",
    # AgentDojo scenarios (harness._agentdojo_run): each with its own denominator.
    "task_utility",
    "utility_under_attack",
    "injection_containment",
)


def compute_metrics(checks: Iterable[CheckResult]) -> tuple[MetricResult, ...]:
    """One result per metric, in `METRICS` order; a check of an ungated kind is an error."""
    passed = dict.fromkeys(METRICS, 0)
    total = dict.fromkeys(METRICS, 0)
    for check in checks:
        metric = METRIC_OF.get(check.kind)
        if metric is None:
            raise HarnessError(
                f"check {check.scenario_id}/{check.id} has kind {check.kind!r}, which no metric "
                "gates; declare it, with its metric, in harness._checks.CHECKS"
            )
        total[metric] += 1
        passed[metric] += int(check.passed)
    return tuple(MetricResult(name, passed[name], total[name]) for name in METRICS)


def format_rate(passed: int, total: int) -> str:
    """`3/4 (75.0%)`, or `absent` when there are no checks: never shown as 100%."""
    if total == 0:
        return "absent"
    return f"{passed}/{total} ({100 * passed / total:.1f}%)"


def count_of(n: int, noun: str) -> str:
    """`1 check`, `3 checks`."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
