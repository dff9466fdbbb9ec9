"""A run streams its traces to disk as scenarios finish, keeps its scenarios packed, and
builds the same reports from the files as it would from traces held in memory."""

from __future__ import annotations

import gc
import shutil
import types
from collections import Counter
from pathlib import Path

import pytest

from harness._results import CheckResult
from harness._scenario_load import LoadedScenario
from harness._scenario_runner import ProviderChoice
from harness._suite import assemble, exit_code, load_checked_suite, run_checked_suite
from harness._trace import Trace
from harness._trace_store import StoredTraces, TraceFacts
from harness.cli._eval_common import baseline_from_file
from harness.reports import render_terminal, write_reports

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
BASELINE = SCENARIOS.parent / "baselines" / "baseline.json"


def _suite() -> list[Path]:
    return [SCENARIOS / name for name in ("reads.yaml", "blocks.yaml", "budgets.yaml")]


def test_each_trace_is_on_disk_when_its_scenario_finishes(tmp_path: Path) -> None:
    scenarios = load_checked_suite(_suite())
    seen: list[tuple[str, bool, bool]] = []

    def progress(done: int, total: int, trace: Trace) -> None:
        path = tmp_path / "traces" / f"{trace.scenario_id}.json"
        later = scenarios[done].scenario.id if done < total else None
        later_written = later is not None and (tmp_path / "traces" / f"{later}.json").exists()
        seen.append((trace.scenario_id, path.is_file(), later_written))

    run = run_checked_suite(
        scenarios,
        provider=ProviderChoice(),
        run_id="run-stream",
        progress=progress,
        trace_dir=tmp_path / "traces",
    )
    assert [sid for sid, _, _ in seen] == [s.scenario.id for s in scenarios]
    assert all(on_disk for _, on_disk, _ in seen)  # written as it finished...
    assert not any(later for _, _, later in seen)  # ...and not before
    assert isinstance(run.traces, StoredTraces)
    assert len(run.traces) == len(scenarios)
    first = (tmp_path / "traces" / f"{scenarios[0].scenario.id}.json").read_bytes()
    assert run.traces[0].canonical() == first


@pytest.mark.parametrize("jobs", [1, 2])
def test_reports_from_streamed_traces_equal_reports_from_traces_in_memory(
    tmp_path: Path, jobs: int
) -> None:
    scenarios = load_checked_suite(_suite())
    held = run_checked_suite(scenarios, provider=ProviderChoice(), run_id="run-same")
    streamed = run_checked_suite(
        scenarios,
        provider=ProviderChoice(),
        run_id="run-same",
        jobs=jobs,
        trace_dir=tmp_path / "streamed" / "traces",
    )
    assert isinstance(held.traces, list) and isinstance(streamed.traces, StoredTraces)
    write_reports(assemble("run-same", scenarios, held.traces), tmp_path / "held")
    write_reports(assemble("run-same", scenarios, streamed.traces), tmp_path / "streamed")
    for name in ("report.json", "summary.md", "junit.xml", "report.html", "manifest.json"):
        assert (tmp_path / "held" / name).read_bytes() == (
            tmp_path / "streamed" / name
        ).read_bytes(), name
    held_traces = sorted(p.name for p in (tmp_path / "held" / "traces").iterdir())
    assert held_traces == sorted(p.name for p in (tmp_path / "streamed" / "traces").iterdir())
    for name in held_traces:
        assert (tmp_path / "held" / "traces" / name).read_bytes() == (
            tmp_path / "streamed" / "traces" / name
        ).read_bytes()


def test_streamed_traces_copied_to_another_report_dir_are_written_there(tmp_path: Path) -> None:
    scenarios = load_checked_suite([SCENARIOS / "reads.yaml"])
    run = run_checked_suite(
        scenarios, provider=ProviderChoice(), run_id="run-copy", trace_dir=tmp_path / "spool"
    )
    paths = write_reports(assemble("run-copy", scenarios, run.traces), tmp_path / "report")
    written = sorted(p.name for p in paths["traces"].iterdir())
    assert written == sorted(f"{s.scenario.id}.json" for s in scenarios)
    shutil.rmtree(tmp_path / "spool")
    assert all((paths["traces"] / name).stat().st_size > 0 for name in written)


def test_a_checked_suite_keeps_its_scenarios_packed_and_they_read_back_equal() -> None:
    from harness._scenario_load import load_scenarios

    models = load_scenarios(_suite())
    packed = load_checked_suite(_suite())
    assert all(isinstance(item.form, bytes) for item in packed)
    assert all(item.lines.keys() <= {("id",)} for item in packed)
    assert [item.scenario for item in packed] == [item.scenario for item in models]
    assert [item.line for item in packed] == [item.line for item in models]


def test_scoring_and_every_report_parse_each_streamed_trace_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Scored where each trace was written (no file read back for checks, coverage or inputs);
    # parsed once, to render it in the HTML report; every other report reads what the store
    # kept as each trace was written.
    scenarios = load_checked_suite(_suite())
    run = run_checked_suite(
        scenarios, provider=ProviderChoice(), run_id="run-reads", trace_dir=tmp_path / "traces"
    )
    reads: list[str] = []
    load, get = StoredTraces._load, StoredTraces.get

    def counted_load(self: StoredTraces, scenario_id: str) -> Trace:
        reads.append(scenario_id)
        return load(self, scenario_id)

    def counted_get(self: StoredTraces, scenario_id: str) -> Trace | None:
        reads.append(scenario_id)
        return get(self, scenario_id)

    monkeypatch.setattr(StoredTraces, "_load", counted_load)
    monkeypatch.setattr(StoredTraces, "get", counted_get)
    result = assemble(run.run_id, run.scenarios, run.traces)
    write_reports(result, tmp_path)
    ids = [s.scenario.id for s in scenarios]
    assert sorted(set(reads)) == sorted(ids)
    assert max(reads.count(sid) for sid in ids) == 1


_NOT_STATE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)


def _held(*roots: object) -> Counter[str]:
    """Instances reachable from `roots` by kind (classes, modules and functions not followed:
    what the objects themselves hold, not the program)."""
    seen: set[int] = set()
    todo = list(roots)
    found: Counter[str] = Counter()
    while todo:
        item = todo.pop()
        if id(item) in seen or isinstance(item, _NOT_STATE):
            continue
        seen.add(id(item))
        found[type(item).__name__] += 1
        todo.extend(gc.get_referents(item))
    return found


def test_a_streamed_run_holds_no_scenario_check_or_trace_record_in_memory(
    tmp_path: Path,
) -> None:
    # What a run keeps per scenario (the packed scenarios, each trace's facts and digest, the
    # check results) is on disk: the suite, the run and its result hold none of them.
    scenarios = load_checked_suite(_suite())
    run = run_checked_suite(
        scenarios, provider=ProviderChoice(), run_id="run-held", trace_dir=tmp_path / "traces"
    )
    result = assemble(run.run_id, run.scenarios, run.traces)
    write_reports(result, tmp_path)
    assert len(result.checks) > len(scenarios) > 10
    assert not result.failed_checks
    held = _held(scenarios, run, result)
    assert held["StoredTraces"] == 1  # the walk does reach the store
    assert held[LoadedScenario.__name__] == 0
    assert held[CheckResult.__name__] == 0
    assert held[TraceFacts.__name__] == 0


def _failing_copy(tmp_path: Path) -> list[Path]:
    """The suite with two scenarios whose expected status no longer holds."""
    copy = tmp_path / "scenarios"
    shutil.copytree(SCENARIOS, copy, ignore=shutil.ignore_patterns("mcp"))
    reads = copy / "reads.yaml"
    text = reads.read_text(encoding="utf-8")
    reads.write_text(text.replace("status: completed", "status: failed", 2), encoding="utf-8")
    return [copy / name for name in ("reads.yaml", "blocks.yaml", "budgets.yaml")]


def test_reports_of_a_failing_gated_streamed_run_equal_those_of_the_run_in_memory(
    tmp_path: Path,
) -> None:
    scenarios = load_checked_suite(_failing_copy(tmp_path))
    baseline, stored = baseline_from_file(BASELINE)
    gated = {"baseline": baseline, "baseline_traces": stored}
    held = run_checked_suite(scenarios, provider=ProviderChoice(), run_id="run-fail")
    streamed = run_checked_suite(
        scenarios,
        provider=ProviderChoice(),
        run_id="run-fail",
        trace_dir=tmp_path / "streamed" / "traces",
    )
    from_memory = assemble("run-fail", scenarios, list(held.traces), **gated)
    from_disk = assemble("run-fail", scenarios, streamed.traces, **gated)
    assert isinstance(from_memory.checks, tuple) and from_memory.failed_checks
    assert from_disk.failed_checks == from_memory.failed_checks
    assert from_disk.gate == from_memory.gate and from_disk.gate is not None
    assert exit_code(from_disk) == exit_code(from_memory) != 0
    write_reports(from_memory, tmp_path / "held")
    write_reports(from_disk, tmp_path / "streamed")
    for name in ("report.json", "summary.md", "junit.xml", "report.html", "manifest.json"):
        assert (tmp_path / "held" / name).read_bytes() == (
            tmp_path / "streamed" / name
        ).read_bytes(), name
    assert render_terminal(from_disk) == render_terminal(from_memory)
