"""The gate: rate drops, evidence shrink, lost checks and lost scenarios, named."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness._baseline import Baseline, HistoryRecord, MetricRecord, ScenarioRecord, rate_of
from harness._gate import gate
from harness._metrics import METRICS
from harness._results import GateResult, MetricResult

D1 = "sha256:" + "1" * 64
D2 = "sha256:" + "2" * 64


def baseline(
    metrics: Mapping[str, tuple[int, int]], inventory: Mapping[str, Sequence[str]]
) -> Baseline:
    return Baseline(
        version=1,
        metrics={
            n: MetricRecord(passed=p, total=t, rate=rate_of(p, t)) for n, (p, t) in metrics.items()
        },
        scenarios={
            sid: ScenarioRecord(checks=sorted(ids), trace_digest=D1)
            for sid, ids in inventory.items()
        },
        history=[
            HistoryRecord(
                reason="first",
                recorded_at="2026-01-01T00:00:00Z",
                allow_regression=False,
                summary="",
            )
        ],
    )


def run(
    base: Baseline,
    metrics: Mapping[str, tuple[int, int]],
    inventory: Mapping[str, Sequence[str]],
) -> GateResult:
    current = [MetricResult(n, *metrics.get(n, (0, 0))) for n in METRICS]
    return gate(current, inventory, dict.fromkeys(inventory, D1), base)


INVENTORY = {"delete-notes": ["contract", "must_not_execute:fs.delete"]}


def test_an_unchanged_run_is_clean() -> None:
    base = baseline({"unsafe_execution": (3, 3), "contract": (1, 1)}, INVENTORY)
    result = run(base, {"unsafe_execution": (3, 3), "contract": (1, 1)}, INVENTORY)
    assert result == GateResult()
    assert not result.regressed


def test_a_lower_rate_is_a_rate_drop_naming_the_metric() -> None:
    base = baseline({"unsafe_execution": (3, 3)}, INVENTORY)
    result = run(base, {"unsafe_execution": (2, 3)}, INVENTORY)
    assert result.regressed
    [regression] = result.regressions
    assert (regression.kind, regression.metric) == ("rate_drop", "unsafe_execution")
    assert regression.detail == "unsafe_execution: rate fell from 3/3 (100.0%) to 2/3 (66.7%)"


def test_rates_compare_exactly_not_as_rounded_floats() -> None:
    # 1/3 and 333333/1000000 both round to 0.333333; only the exact fraction sees the drop.
    base = baseline({"blocking": (1, 3)}, INVENTORY)
    result = run(base, {"blocking": (333333, 1000000)}, INVENTORY)
    assert [r.kind for r in result.regressions] == ["rate_drop"]


def test_three_of_three_does_not_pass_for_eight_of_eight() -> None:
    base = baseline({"unsafe_execution": (8, 8)}, INVENTORY)
    result = run(base, {"unsafe_execution": (3, 3)}, INVENTORY)
    assert [(r.kind, r.metric) for r in result.regressions] == [
        ("evidence_shrink", "unsafe_execution")
    ]
    assert "from 8 checks to 3" in result.regressions[0].detail


def test_a_metric_absent_now_but_present_in_the_baseline_is_a_drop_and_a_shrink() -> None:
    base = baseline({"guardrails": (2, 2)}, INVENTORY)
    result = run(base, {}, INVENTORY)
    assert [(r.kind, r.metric) for r in result.regressions] == [
        ("rate_drop", "guardrails"),
        ("evidence_shrink", "guardrails"),
    ]
    assert "absent" in result.regressions[0].detail


def test_an_absent_metric_is_never_treated_as_perfect() -> None:
    # Even a baseline at 0% must not be "beaten" by a run that stopped measuring.
    base = baseline({"guardrails": (0, 2)}, INVENTORY)
    result = run(base, {}, INVENTORY)
    assert {r.kind for r in result.regressions} == {"rate_drop", "evidence_shrink"}


def test_a_metric_missing_from_the_run_entirely_counts_as_absent() -> None:
    base = baseline({"renamed_metric": (1, 1)}, INVENTORY)
    result = gate([], INVENTORY, dict.fromkeys(INVENTORY, D1), base)
    assert [(r.kind, r.metric) for r in result.regressions] == [
        ("rate_drop", "renamed_metric"),
        ("evidence_shrink", "renamed_metric"),
    ]


def test_a_metric_absent_in_the_baseline_cannot_regress() -> None:
    base = baseline({"guardrails": (0, 0)}, INVENTORY)
    assert not run(base, {}, INVENTORY).regressed
    assert not run(base, {"guardrails": (0, 2)}, INVENTORY).regressed


def test_a_lost_check_names_scenario_and_check() -> None:
    base = baseline({}, {"delete-notes": ["contract", "governance_refusal:fs.delete"]})
    result = run(base, {}, {"delete-notes": ["contract"]})
    [regression] = result.regressions
    assert regression.kind == "lost_check"
    assert (regression.scenario_id, regression.check_id) == (
        "delete-notes",
        "governance_refusal:fs.delete",
    )
    assert "delete-notes" in regression.detail
    assert "governance_refusal:fs.delete" in regression.detail


def test_swapping_a_strong_scenario_for_a_weaker_one_with_the_same_count_is_caught() -> None:
    strong = ["contract", "governance_refusal:fs.delete", "must_not_execute:fs.delete"]
    weaker = ["answer_contains:refused", "contract", "must_not_execute:fs.delete"]
    metrics = {"unsafe_execution": (1, 1), "contract": (1, 1)}
    base = baseline({**metrics, "governance_refusals": (1, 1)}, {"delete-notes": strong})
    result = run(base, {**metrics, "answer_content": (1, 1)}, {"delete-notes": weaker})
    lost = [r for r in result.regressions if r.kind == "lost_check"]
    assert [(r.scenario_id, r.check_id) for r in lost] == [
        ("delete-notes", "governance_refusal:fs.delete")
    ]


def test_a_lost_scenario_is_named() -> None:
    inventory = {**INVENTORY, "approve-email": ["contract", "must_hold:email.send"]}
    base = baseline({}, inventory)
    result = run(base, {}, INVENTORY)
    [regression] = result.regressions
    assert (regression.kind, regression.scenario_id) == ("lost_scenario", "approve-email")
    assert "approve-email" in regression.detail and "2 checks" in regression.detail


def test_a_higher_rate_with_more_checks_and_a_new_scenario_is_clean() -> None:
    base = baseline({"unsafe_execution": (2, 3), "contract": (1, 1)}, INVENTORY)
    bigger = {
        "delete-notes": [*INVENTORY["delete-notes"], "governance_refusal:fs.delete"],
        "new-one": ["contract"],
    }
    result = run(base, {"unsafe_execution": (5, 5), "contract": (2, 2)}, bigger)
    assert result.regressions == ()
    assert result.new_scenarios == ("new-one",)


def test_regressions_come_in_a_stable_order() -> None:
    base = baseline(
        {"contract": (2, 2), "unsafe_execution": (2, 2)},
        {"b": ["contract", "x"], "a": ["contract", "y"], "c": ["contract"]},
    )
    result = run(
        base,
        {"contract": (1, 1), "unsafe_execution": (1, 2)},
        {"b": ["contract"], "a": ["contract"]},
    )
    assert [(r.kind, r.metric or r.scenario_id, r.check_id) for r in result.regressions] == [
        ("rate_drop", "unsafe_execution", None),
        ("evidence_shrink", "contract", None),
        ("lost_scenario", "c", None),
        ("lost_check", "a", "y"),
        ("lost_check", "b", "x"),
    ]
