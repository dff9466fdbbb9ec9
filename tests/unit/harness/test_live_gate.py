"""The live gate compares Wilson intervals: a flake never fails it, a real drop does."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness._errors import BaselineError
from harness._live_baseline import (
    build_live_baseline,
    live_baseline_path,
    load_live_baseline,
    write_live_baseline,
)
from harness._live_gate import live_gate
from harness._repeat_values import ScenarioRepeats

IDS = [f"s{i}" for i in range(5)]


def _scenarios(passes: dict[str, int], runs: int = 5) -> list[ScenarioRepeats]:
    # one tool_execution check per run of each scenario
    return [ScenarioRepeats(s, p, runs, {"tool_execution": (p, runs)}) for s, p in passes.items()]


def _baseline(passes: dict[str, int], runs: int = 5):  # type: ignore[no-untyped-def]
    return build_live_baseline(
        _scenarios(passes, runs),
        model="m",
        endpoint_host="h",
        repeat=runs,
        reason="r",
        recorded_at="2026-01-01T00:00:00Z",
    )


def test_one_flaky_run_of_one_scenario_does_not_fail_the_gate() -> None:
    baseline = _baseline(dict.fromkeys(IDS, 5))
    now = _scenarios({**dict.fromkeys(IDS, 5), "s2": 4})
    assert not live_gate(now, baseline, "b.json").regressed


def test_one_flaky_run_in_every_scenario_does_not_fail_the_gate() -> None:
    baseline = _baseline(dict.fromkeys(IDS, 5))
    assert not live_gate(_scenarios(dict.fromkeys(IDS, 4)), baseline, "b.json").regressed


def test_a_real_drop_from_all_to_none_across_scenarios_fails_the_gate() -> None:
    baseline = _baseline(dict.fromkeys(IDS, 5))
    result = live_gate(_scenarios(dict.fromkeys(IDS, 0)), baseline, "b.json")
    assert {r.metric for r in result.regressions} == {"tool_execution", "scenario_pass"}
    assert "0/25 [0.0%, 13.3%] lies below the baseline's 25/25 [86.7%, 100.0%]" in (
        result.regressions[0].detail
    )


def test_one_scenario_failing_every_run_on_its_own_is_too_small_to_gate() -> None:
    # 20/25 [60.9%, 91.1%] still overlaps 25/25 [86.7%, 100%]: honest at this sample size.
    baseline = _baseline(dict.fromkeys(IDS, 5))
    assert not live_gate(_scenarios({**dict.fromkeys(IDS, 5), "s0": 0}), baseline, "b").regressed


def test_rates_compare_only_the_scenarios_both_runs_have() -> None:
    baseline = _baseline({"s0": 5, "s1": 0})
    result = live_gate(_scenarios({"s0": 5, "new": 0}), baseline, "b.json")
    assert not result.regressed  # s1's failures are not held against s0, new is not gated
    assert (result.not_in_run, result.not_in_baseline) == (("s1",), ("new",))


def test_a_metric_the_baseline_had_that_is_absent_now_regresses() -> None:
    baseline = _baseline({"s0": 5})
    now = [ScenarioRepeats("s0", 5, 5, {})]
    assert [r.metric for r in live_gate(now, baseline, "b").regressions] == ["tool_execution"]


def test_the_live_baseline_round_trips_and_a_hand_edited_one_is_refused(tmp_path: Path) -> None:
    path = write_live_baseline(_baseline({"s0": 5}), tmp_path / "m.json")
    assert load_live_baseline(path).as_repeats() == tuple(_scenarios({"s0": 5}))
    path.write_text(path.read_text().replace('"passes": 5', '"passes": "five"'))
    with pytest.raises(BaselineError, match=r"scenarios\.s0\.passes.*re-record"):
        load_live_baseline(path)


def test_a_model_id_becomes_a_safe_file_name_inside_the_live_directory() -> None:
    assert live_baseline_path("gpt-4o-mini") == Path("baselines/live/gpt-4o-mini.json")
    assert live_baseline_path("org/model:fault") == Path("baselines/live/org_model_fault.json")
    assert live_baseline_path("../../etc/passwd").parent == Path("baselines/live")
    assert live_baseline_path("..") == Path("baselines/live/model.json")
