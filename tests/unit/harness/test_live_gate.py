"""The live gate compares Wilson intervals: a flake never fails it, a real drop does."""

from __future__ import annotations

import dataclasses
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
from harness._live_record import live_baseline_diff, live_history, live_record_refusals
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


def test_a_focused_run_compares_rates_only_on_the_scenarios_both_runs_have() -> None:
    baseline = _baseline({"s0": 5, "s1": 0})
    result = live_gate(_scenarios({"s0": 5, "new": 0}), baseline, "b.json", partial="--id s0")
    assert not result.regressed  # s1's failures are not held against s0, new is not gated
    assert (result.not_in_run, result.not_in_baseline) == (("s1",), ("new",))
    assert result.partial == "--id s0"


def test_a_full_run_without_a_baseline_scenario_regresses_even_when_it_never_failed() -> None:
    baseline = _baseline({"s0": 5, "s1": 5, "s2": 0})
    result = live_gate(_scenarios({"s0": 5, "s1": 5}), baseline, "b.json")
    lost = [(r.kind, r.metric) for r in result.regressions]
    assert lost == [("lost_scenario", "s2")]
    renamed = live_gate(_scenarios({"s0": 5, "s1": 5, "s2-renamed": 5}), baseline, "b.json")
    assert [(r.kind, r.metric) for r in renamed.regressions] == [("lost_scenario", "s2")]


def _with(scenarios: list[ScenarioRepeats], **fields: object) -> list[ScenarioRepeats]:
    return [dataclasses.replace(s, **fields) for s in scenarios]  # type: ignore[arg-type]


def test_a_check_every_recorded_run_had_and_no_run_now_produces_is_a_lost_check() -> None:
    recorded = _with(_scenarios({"s0": 5}), checks=("answer_contains:x", "must_execute:t"))
    baseline = build_live_baseline(
        recorded, model="m", endpoint_host="h", repeat=5, reason="r", recorded_at="t"
    )
    weakened = _with(_scenarios({"s0": 5}), checks=("must_execute:t",))
    result = live_gate(weakened, baseline, "b")
    assert [(r.kind, r.metric) for r in result.regressions] == [("lost_check", "s0")]
    assert "answer_contains:x" in result.regressions[0].detail
    # produced by some run only (a check that needs evidence): still there, not lost
    some = _with(weakened, some_checks=("answer_contains:x", "must_execute:t"))
    assert not live_gate(some, baseline, "b").regressed
    # a focused run is held to its selected scenarios' checks too
    assert live_gate(weakened, baseline, "b", partial="--id s0").regressed


def test_a_scenario_whose_inputs_changed_under_the_same_id_regresses_as_changed_inputs() -> None:
    recorded = _with(_scenarios({"s0": 5, "s1": 5}), inputs_digest="sha256:old")
    baseline = build_live_baseline(
        recorded, model="m", endpoint_host="h", repeat=5, reason="r", recorded_at="t"
    )
    now = [*_with(_scenarios({"s0": 5}), inputs_digest="sha256:new"), *recorded[1:]]
    result = live_gate(now, baseline, "b")
    assert [(r.kind, r.metric) for r in result.regressions] == [("changed_inputs", "s0")]
    assert "re-record" in result.regressions[0].detail
    # a baseline recorded before inputs were kept cannot say: no verdict on inputs
    unknown = _baseline({"s0": 5, "s1": 5})
    assert not live_gate(now, unknown, "b").regressed


def test_recording_that_drops_a_scenario_or_lowers_a_rate_within_noise_is_refused() -> None:
    previous = _baseline({"s0": 5, "s1": 5, "s2": 5})
    assert live_record_refusals(_scenarios({"s0": 5, "s1": 5, "s2": 5}), previous, "b") == []
    dropped = live_record_refusals(_scenarios({"s0": 5, "s1": 5}), previous, "b")
    assert len(dropped) == 1 and "s2" in dropped[0] and "lost_scenario" in dropped[0]
    lower = live_record_refusals(_scenarios({"s0": 5, "s1": 5, "s2": 4}), previous, "b")
    assert any("tool_execution: 14/15" in r and "lower" in r for r in lower), lower
    assert live_record_refusals(_scenarios({"s0": 5}), None, "b") == []


def test_a_changed_scenario_is_accepted_by_recording_and_named_in_the_diff() -> None:
    old = _with(_scenarios({"s0": 5}), inputs_digest="sha256:old", checks=("a", "b"))
    new = _with(_scenarios({"s0": 5}), inputs_digest="sha256:new", checks=("a", "b"))
    previous = build_live_baseline(
        old, model="m", endpoint_host="h", repeat=5, reason="r", recorded_at="t"
    )
    assert live_record_refusals(new, previous, "b") == []
    after = build_live_baseline(
        new, model="m", endpoint_host="h", repeat=5, reason="r2", recorded_at="t2"
    )
    assert "inputs changed:\n  s0" in live_baseline_diff(previous, after)


def test_the_history_keeps_every_recording_with_its_reason() -> None:
    first = _baseline({"s0": 5})  # a file from before histories: its one recording is kept
    history = live_history(
        first, _scenarios({"s0": 4}), model="m", repeat=5, reason="why now",
        recorded_at="t2", allow_regression=True, refusals=["scenario_pass lower"],
    )  # fmt: skip
    assert [h.reason for h in history] == ["r", "why now"]
    assert history[1].allow_regression and "scenario_pass lower" in history[1].summary
    second = build_live_baseline(
        _scenarios({"s0": 4}), model="m", endpoint_host="h", repeat=5, reason="why now",
        recorded_at="t2", history=history,
    )  # fmt: skip
    again = live_history(
        second, _scenarios({"s0": 4}), model="m", repeat=5, reason="third",
        recorded_at="t3", allow_regression=False, refusals=[],
    )  # fmt: skip
    assert [h.reason for h in again] == ["r", "why now", "third"]


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
    assert live_baseline_path("org/model:fault") == Path("baselines/live/org_2fmodel_3afault.json")
    for model in ("../../etc/passwd", "..", ".", "/", "a/../../b", "\x00", "é/ü", "x" * 300):
        path = live_baseline_path(model)
        assert path.parent == Path("baselines/live"), model
        assert not path.name.startswith(".") and len(path.name) <= 210, model


def test_different_model_ids_never_share_a_live_baseline_file() -> None:
    models = [
        "org/m:1", "org_m:1", "org_m_1", "org-m-1", "org.m.1", "org_2fm_3a1", ".m", "_2em",
        "m", "M", "", "_", "é", "_c3_a9", "a" * 300, "a" * 299 + "b", "a" * 250, "a b", "a_20b",
    ]  # fmt: skip
    names = [live_baseline_path(m).name for m in models]
    assert len(set(names)) == len(models), sorted(names)


def test_a_metric_only_a_lost_scenario_had_is_absent_from_a_full_run_not_a_focused_one() -> None:
    baseline = build_live_baseline(
        [
            ScenarioRepeats("s0", 5, 5, {"tool_execution": (5, 5)}),
            ScenarioRepeats("s1", 4, 5, {"answer_content": (4, 5)}),
        ],
        model="m", endpoint_host="h", repeat=5, reason="r", recorded_at="t",
    )  # fmt: skip
    now = [ScenarioRepeats("s0", 5, 5, {"tool_execution": (5, 5)})]
    full = live_gate(now, baseline, "b")
    assert [(r.kind, r.metric) for r in full.regressions] == [
        ("lost_scenario", "s1"),
        ("absent_metric", "answer_content"),
    ]
    assert not live_gate(now, baseline, "b", partial="--id s0").regressed
