"""Coverage from real small runs: decisive rules and conditions, charged and denying budgets."""

from __future__ import annotations

from pathlib import Path

from harness._coverage import PolicyCoverage
from harness._scenario_runner import ProviderChoice, run_scenario
from harness._suite import load_checked_suite, measure_coverage

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"


def _coverage(file: str, ids: set[str]) -> dict[str, PolicyCoverage]:
    suite = [s for s in load_checked_suite([SCENARIOS / file]) if s.scenario.id in ids]
    traces = [run_scenario(s, run_id="t", provider=ProviderChoice()) for s in suite]
    return {c.policy_file: c for c in measure_coverage(suite, traces)}


def test_a_rule_is_covered_only_where_it_decided_a_call() -> None:
    [coverage] = _coverage("reads.yaml", {"read-search-notes", "read-file-list"}).values()
    assert coverage.decisive.get("fs-search-notes") == 1
    assert coverage.decisive.get("fs-read") == 1
    assert "rule:fs-search-notes" in coverage.covered
    # fs-no-secrets saw both calls (its selectors held) but decided neither.
    assert "rule:fs-no-secrets" in coverage.uncovered
    assert coverage.why_uncovered("rule:fs-no-delete") == "rule fs-no-delete: matched no call"
    # The secrets condition failed on both calls, and failing alone is what kept it out.
    assert coverage.condition_results.get("fs-no-secrets.when[0]:failed") == 2
    assert "fs-move-within-reports.when[0]" in coverage.undecided_conditions


def test_a_budget_is_charged_by_executed_calls_and_covered_only_when_it_denies() -> None:
    found = _coverage("budgets.yaml", {"budget-run-limit-stops-a-loop"})
    coverage = found["scenarios/policies/budgets.yaml"]
    assert coverage.charged == {"deletes-per-run": 2, "deletes-per-actor": 2}
    assert coverage.denied == {"deletes-per-run": 1}
    assert "budget:deletes-per-run" in coverage.covered
    assert "budget:deletes-per-actor" in coverage.uncovered
    assert coverage.why_uncovered("budget:deletes-per-actor") == (
        "budget deletes-per-actor: charged 2 time(s), never denied a call"
    )
