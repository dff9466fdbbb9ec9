"""Checks, coverage and inputs come from one pass over the traces; a run without a baseline
checks every scenario's inputs against its trace but keeps none of them."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness._errors import UsageProblem
from harness._scenario_load import LoadedScenario
from harness._scenario_runner import ProviderChoice
from harness._suite import (
    load_checked_suite,
    measure_coverage,
    run_checked_suite,
    run_inputs,
    score,
    score_in_one_pass,
)
from harness._trace import Trace

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"


def _run(tmp_path: Path) -> tuple[Path, list[LoadedScenario], Sequence[Trace]]:
    shutil.copytree(SCENARIOS, tmp_path / "scenarios")
    suite = tmp_path / "scenarios" / "reads.yaml"
    scenarios = load_checked_suite([suite])
    run = run_checked_suite(scenarios, provider=ProviderChoice(), run_id="run-one-pass")
    return suite, scenarios, run.traces


def test_one_pass_gives_what_the_three_separate_passes_give(tmp_path: Path) -> None:
    _, scenarios, traces = _run(tmp_path)
    scored = score_in_one_pass(scenarios, traces)
    assert scored.checks == score(scenarios, traces)[0]
    assert scored.coverage == measure_coverage(scenarios, traces)
    assert scored.inputs == run_inputs(scenarios, traces)
    assert scored.inputs and scored.checks


def test_without_a_baseline_no_inputs_are_kept_but_changed_ones_are_still_refused(
    tmp_path: Path,
) -> None:
    suite, scenarios, traces = _run(tmp_path)
    assert score_in_one_pass(scenarios, traces, keep_inputs=False).inputs == {}
    text = suite.read_text(encoding="utf-8")
    suite.write_text(text.replace("ORD-0001?", "ORD-0001 please?", 1), encoding="utf-8")
    edited = load_checked_suite([suite])
    with pytest.raises(UsageProblem, match="inputs of read-order-lookup"):
        score_in_one_pass(edited, traces, keep_inputs=False)
