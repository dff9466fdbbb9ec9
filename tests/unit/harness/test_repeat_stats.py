"""Wilson intervals, pass@k and pass^k of a repeated run."""

from __future__ import annotations

import pytest

from harness._repeat_stats import (
    format_interval,
    pooled_metrics,
    scenario_repeats,
    wilson_interval,
)
from harness._results import CheckResult


@pytest.mark.parametrize(
    ("passed", "total", "low", "high"),
    [
        # Published Wilson 95% values (e.g. Newcombe 1998, table I; R's binom.confint "wilson").
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (5, 10, 0.2366, 0.7634),
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 1, 0.0, 0.7935),
        (1, 1, 0.2065, 1.0),
        (5, 5, 0.5655, 1.0),
        (0, 5, 0.0, 0.4345),
    ],
)
def test_the_wilson_interval_matches_published_values(
    passed: int, total: int, low: float, high: float
) -> None:
    interval = wilson_interval(passed, total)
    assert interval is not None
    assert interval[0] == pytest.approx(low, abs=5e-5)
    assert interval[1] == pytest.approx(high, abs=5e-5)


def test_the_interval_at_zero_and_all_is_exactly_bounded_by_zero_and_one() -> None:
    for total in (1, 2, 7, 1000):
        zero = wilson_interval(0, total)
        full = wilson_interval(total, total)
        assert zero is not None and full is not None
        assert zero[0] == 0.0 and 0.0 < zero[1] < 1.0
        assert full[1] == 1.0 and 0.0 < full[0] < 1.0


def test_no_trials_has_no_interval_and_impossible_counts_are_refused() -> None:
    assert wilson_interval(0, 0) is None
    assert format_interval(None) == "absent"
    for passed, total in ((3, 2), (-1, 2), (0, -1)):
        with pytest.raises(ValueError, match="passed <= total"):
            wilson_interval(passed, total)


def _check(sid: str, passed: bool, kind: str = "must_execute") -> CheckResult:
    return CheckResult(sid, f"{kind}:x", kind, passed, "why")


def test_pass_at_k_needs_one_passing_run_and_pass_hat_k_needs_all() -> None:
    runs = [
        [_check("a", True), _check("b", True), _check("c", False)],
        [_check("a", True), _check("b", False), _check("c", False)],
        [_check("a", True), _check("b", True), _check("c", False)],
    ]
    found = {s.scenario_id: s for s in scenario_repeats(runs)}
    assert (found["a"].passes, found["a"].runs) == (3, 3)
    assert (found["a"].pass_at_k, found["a"].pass_hat_k) == (True, True)
    assert (found["b"].passes, found["b"].pass_at_k, found["b"].pass_hat_k) == (2, True, False)
    assert (found["c"].passes, found["c"].pass_at_k, found["c"].pass_hat_k) == (0, False, False)


def test_a_run_passes_only_when_every_check_of_it_passes() -> None:
    runs = [[_check("a", True), _check("a", False, "answer_contains")]]
    [only] = scenario_repeats(runs)
    assert only.passes == 0
    assert only.metrics == {"answer_content": (0, 1), "tool_execution": (1, 1)}


def test_metrics_pool_every_run_of_every_scenario_and_drop_absent_ones() -> None:
    runs = [[_check("a", True), _check("b", False)], [_check("a", True), _check("b", True)]]
    pooled = pooled_metrics(scenario_repeats(runs))
    assert [(m.name, m.passed, m.total) for m in pooled] == [("tool_execution", 3, 4)]
    only_a = pooled_metrics(scenario_repeats(runs), only=["a"])
    assert [(m.passed, m.total) for m in only_a] == [(2, 2)]


def test_a_scenario_records_the_check_ids_of_every_run_apart_from_those_of_some_runs() -> None:
    def check(cid: str, kind: str) -> CheckResult:
        return CheckResult("s", cid, kind, True, "")

    always = check("must_not_execute:fs.delete", "must_not_execute")
    sometimes = check("governance_refusal:fs.delete", "governance_refusal")
    (stats,) = scenario_repeats([[always, sometimes], [always], [always, sometimes]])
    assert stats.checks == ("must_not_execute:fs.delete",)
    assert stats.some_checks == ("governance_refusal:fs.delete", "must_not_execute:fs.delete")
