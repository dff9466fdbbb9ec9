"""A streamed run scores each trace where it is written (in the -j worker that ran it): the
checks, coverage and metrics are what scoring the trace files afterwards gives, and the scores
stand only for the scenarios the run ran."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness._errors import UsageProblem
from harness._scenario_runner import ProviderChoice
from harness._suite import assemble, load_checked_suite, run_checked_suite, trace_names
from harness._trace_store import StoredTraces

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
FILES = ("reads.yaml", "blocks.yaml", "budgets.yaml", "approvals.yaml", "failures.yaml")


def _suite(root: Path) -> list[Path]:
    shutil.copytree(SCENARIOS, root / "scenarios")
    return [root / "scenarios" / name for name in FILES]


def _from_files(run_traces: StoredTraces, directory: Path) -> StoredTraces:
    """The same trace files as a store with no scores: scoring must read every file."""
    again = StoredTraces(directory, trace_names(load_checked_suite(_SUITE)))
    for sid in run_traces.ids:
        trace = run_traces.get(sid)
        assert trace is not None
        again.add(trace)
    assert again.scores is None
    return again


_SUITE: list[Path] = []


@pytest.mark.parametrize("jobs", [1, 2])
def test_scores_made_where_traces_are_written_equal_scoring_the_trace_files(
    tmp_path: Path, jobs: int
) -> None:
    _SUITE[:] = _suite(tmp_path)
    scenarios = load_checked_suite(_SUITE)
    run = run_checked_suite(
        scenarios,
        provider=ProviderChoice(),
        jobs=jobs,
        run_id="run-source",
        trace_dir=tmp_path / "report" / "traces",
    )
    assert isinstance(run.traces, StoredTraces) and run.traces.scores is not None
    assert run.traces.scores.count == len(scenarios)
    at_source = assemble(run.run_id, scenarios, run.traces)
    reread = assemble(run.run_id, scenarios, _from_files(run.traces, tmp_path / "again"))
    assert list(at_source.checks) == list(reread.checks) and len(at_source.checks) > 0
    assert at_source.failed_checks == reread.failed_checks
    assert at_source.metrics == reread.metrics
    assert at_source.coverage == reread.coverage
    assert any(c.denied for c in at_source.coverage)  # budgets denied: counted at the source
    assert any(c.charged for c in at_source.coverage)


def test_scores_stand_only_for_the_scenarios_the_run_ran(tmp_path: Path) -> None:
    # Scoring the run's traces against other scenario objects (here: a file edited since the
    # run) reads the traces again, and so still refuses inputs that changed.
    _SUITE[:] = _suite(tmp_path)
    scenarios = load_checked_suite(_SUITE)
    run = run_checked_suite(
        scenarios, provider=ProviderChoice(), run_id="run-source", trace_dir=tmp_path / "t"
    )
    reads = tmp_path / "scenarios" / "reads.yaml"
    text = reads.read_text(encoding="utf-8")
    reads.write_text(text.replace("ORD-0001?", "ORD-0001 please?", 1), encoding="utf-8")
    edited = load_checked_suite(_SUITE)
    with pytest.raises(UsageProblem, match="inputs of read-order-lookup"):
        assemble(run.run_id, edited, run.traces)


def test_a_gated_run_keeps_the_inputs_of_every_scenario(tmp_path: Path) -> None:
    _SUITE[:] = _suite(tmp_path)
    scenarios = load_checked_suite(_SUITE)
    run = run_checked_suite(
        scenarios, provider=ProviderChoice(), run_id="run-source", trace_dir=tmp_path / "t"
    )
    from harness._suite import score_in_one_pass

    scored = score_in_one_pass(scenarios, run.traces, keep_inputs=True)
    assert sorted(scored.inputs) == sorted(s.scenario_id for s in scenarios)
    for sid, inputs in scored.inputs.items():
        trace = run.traces.get(sid) if isinstance(run.traces, StoredTraces) else None
        assert trace is not None and inputs.digest == trace.inputs_digest
