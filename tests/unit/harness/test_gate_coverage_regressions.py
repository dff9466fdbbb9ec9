"""Lost coverage in the gate: each of the three ways coverage can be lost."""

from __future__ import annotations

from harness._gate import CoverageState, coverage_regressions

P = "governance/data/default_policy.yaml"
BASE = {P: CoverageState(covered=("budget:b", "rule:a", "rule:c"), uncovered=("rule:old",))}


def test_the_same_coverage_is_no_regression() -> None:
    assert coverage_regressions(BASE, BASE) == []
    # More covered than before is not a regression either.
    more = {P: CoverageState(covered=("budget:b", "rule:a", "rule:c", "rule:old"), uncovered=())}
    assert coverage_regressions(more, BASE) == []


def test_a_covered_rule_that_is_no_longer_covered_is_named() -> None:
    now = {P: CoverageState(covered=("budget:b", "rule:c"), uncovered=("rule:a", "rule:old"))}
    found = coverage_regressions(now, BASE)
    assert [(r.kind, r.check_id) for r in found] == [("lost_coverage", f"{P} rule:a")]
    assert "is not any more" in found[0].detail
    gone = {P: CoverageState(covered=("rule:a", "rule:c"), uncovered=("rule:old",))}
    [deleted] = coverage_regressions(gone, BASE)
    assert deleted.check_id == f"{P} budget:b" and "is gone from the policy" in deleted.detail


def test_a_policy_file_no_scenario_runs_with_any_more_loses_all_its_coverage() -> None:
    found = coverage_regressions({}, BASE)
    assert sorted(r.check_id for r in found) == [f"{P} budget:b", f"{P} rule:a", f"{P} rule:c"]
    assert all("no scenario runs with" in r.detail for r in found)


def test_a_new_rule_nobody_covers_is_named_but_an_accepted_uncovered_one_is_not() -> None:
    now = {
        P: CoverageState(
            covered=("budget:b", "rule:a", "rule:c"), uncovered=("rule:new", "rule:old")
        )
    }
    found = coverage_regressions(now, BASE)
    assert [r.check_id for r in found] == [f"{P} rule:new"]
    assert "is new and no scenario covers it" in found[0].detail
