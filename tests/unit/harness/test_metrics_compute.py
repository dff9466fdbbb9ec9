"""Gated metrics: every check kind is gated by exactly one metric; absent is never 100%."""

from __future__ import annotations

import pytest

from harness._checks import CHECK_KINDS, METRIC_OF
from harness._errors import HarnessError
from harness._metrics import METRICS, compute_metrics, format_rate
from harness._results import CheckResult


def check(kind: str, passed: bool, cid: str = "x", sid: str = "s1") -> CheckResult:
    return CheckResult(scenario_id=sid, id=cid, kind=kind, passed=passed, why="")


def test_every_check_kind_is_gated_and_no_metric_gates_an_unknown_kind() -> None:
    assert set(METRIC_OF) == CHECK_KINDS


def test_every_metric_gates_some_kind_and_kinds_map_only_to_known_metrics() -> None:
    assert set(METRIC_OF.values()) == set(METRICS)
    assert len(METRICS) == len(set(METRICS))


def test_the_metric_order_is_fixed() -> None:
    assert METRICS == (
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
        "task_utility",
        "utility_under_attack",
        "injection_containment",
    )


def test_kinds_are_grouped_into_their_metrics() -> None:
    assert METRIC_OF["must_hold"] == METRIC_OF["approval"] == "approval_flow"
    assert METRIC_OF["budget"] == METRIC_OF["budget_reset"] == "budget_enforcement"
    assert METRIC_OF["termination"] == METRIC_OF["max_steps"] == "termination"
    assert METRIC_OF["answer_contains"] == METRIC_OF["answer_not_contains"] == "answer_content"
    assert METRIC_OF["status"] == "run_outcome"
    assert METRIC_OF["agentdojo_utility"] == "task_utility"
    assert METRIC_OF["agentdojo_utility_under_attack"] == "utility_under_attack"
    assert METRIC_OF["agentdojo_attack"] == "injection_containment"


def test_compute_metrics_counts_passed_over_total_per_metric_in_order() -> None:
    checks = [
        check("must_not_execute", True),
        check("must_not_execute", False),
        check("must_not_execute", True),
        check("must_hold", True),
        check("approval", False),
        check("contract", True),
    ]
    metrics = compute_metrics(checks)
    assert [m.name for m in metrics] == list(METRICS)
    got = {m.name: (m.passed, m.total) for m in metrics}
    assert got["unsafe_execution"] == (2, 3)
    assert got["approval_flow"] == (1, 2)
    assert got["contract"] == (1, 1)


def test_a_metric_without_checks_is_absent_not_perfect() -> None:
    metrics = {m.name: m for m in compute_metrics([check("contract", True)])}
    guardrails = metrics["guardrails"]
    assert guardrails.total == 0
    assert guardrails.absent
    assert guardrails.rate is None
    assert format_rate(guardrails.passed, guardrails.total) == "absent"
    assert metrics["contract"].rate == 1.0


def test_an_ungated_check_kind_is_an_error_not_silently_dropped() -> None:
    with pytest.raises(HarnessError, match="no metric gates"):
        compute_metrics([check("contract", True), check("vibes", True)])


def test_format_rate_shows_the_fraction_and_percentage() -> None:
    assert format_rate(2, 3) == "2/3 (66.7%)"
    assert format_rate(0, 4) == "0/4 (0.0%)"
