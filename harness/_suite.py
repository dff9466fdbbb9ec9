"""A suite run end to end: load, contract-check, run, score, gate. The CLI is a thin shell on it.

Scoring reads traces only, never live objects, so a stored run can be re-scored (`proctor
score`) and re-gated (`proctor gate`) without running anything again.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from governance import SystemClock, load_policy
from harness._baseline import Baseline, metric_results
from harness._check_store import StoredChecks
from harness._checks import expand_checks, inventory_of
from harness._coverage import PolicyCoverage, PolicyUse, measure
from harness._errors import UsageProblem
from harness._gate import CoverageState, gate
from harness._identity import ScenarioInputs, scenario_inputs
from harness._metrics import compute_metrics
from harness._partial import narrowed_baseline, with_unrecorded_metric_drops
from harness._results import CheckResult, MetricResult, SuiteResult
from harness._scenario_load import LoadedScenario, mcp_config_digest, resolve_policy_path
from harness._scenario_runner import ProviderChoice, identity_record
from harness._select import Selected
from harness._source_scores import DEFAULT_POLICY_NAME as DEFAULT_POLICY_NAME
from harness._source_scores import PolicyUses, SourceScores
from harness._source_scores import policy_file_name as policy_file_name
from harness._suite_check import CheckedSuite as CheckedSuite
from harness._suite_check import ContractBroken as ContractBroken
from harness._suite_check import builtin_registry as builtin_registry
from harness._suite_check import load_checked_suite as load_checked_suite
from harness._suite_check import mcp_registry as mcp_registry
from harness._suite_check import registry_for, replayable
from harness._suite_workers import Progress, run_suite
from harness._trace import Trace
from harness._trace_store import LazyStableTraces, StoredTraces, trace_filenames
from harness.providers._replay import ReplayProvider

if TYPE_CHECKING:
    from governance.telemetry import Telemetry


def new_run_id() -> str:
    """The suite run's id: the one field of a trace that varies between runs."""
    stamp = SystemClock().now().strftime("%Y%m%dT%H%M%SZ")
    return f"run-{stamp}-{secrets.token_hex(3)}"


def score(
    scenarios: Sequence[LoadedScenario], traces: Sequence[Trace]
) -> tuple[list[CheckResult], tuple[MetricResult, ...]]:
    by_id = scenario_finder(scenarios)
    checks: list[CheckResult] = []
    for trace in traces:
        checks.extend(expand_checks(_scenario_of(by_id, trace).scenario, trace))
    return checks, compute_metrics(checks)


def scenario_finder(
    scenarios: Sequence[LoadedScenario],
) -> Callable[[str], LoadedScenario | None]:
    """scenario id -> its scenario: a checked suite looks it up on disk; any other sequence is
    indexed in memory (packed: models one at a time)."""
    if isinstance(scenarios, CheckedSuite):
        return scenarios.by_id
    return {item.scenario_id: item for item in scenarios}.get


def _scenario_of(by_id: Callable[[str], LoadedScenario | None], trace: Trace) -> LoadedScenario:
    item = by_id(trace.scenario_id)
    if item is None:
        raise UsageProblem(
            f"the run has a trace of scenario {trace.scenario_id!r}, which is in none of "
            "the scenario files given; point --scenarios at the files the run used, or "
            "re-run the suite"
        )
    return item


@dataclass(frozen=True, slots=True)
class Scored:
    checks: Sequence[CheckResult]  # a StoredChecks when the traces are stored
    coverage: tuple[PolicyCoverage, ...]
    inputs: dict[str, ScenarioInputs]


def score_in_one_pass(
    scenarios: Sequence[LoadedScenario], traces: Sequence[Trace], *, keep_inputs: bool = True
) -> Scored:
    """`score`, `measure_coverage` and `run_inputs` from one read of each trace: a streamed
    run's trace files are parsed once for all three, not three times. Without `keep_inputs`
    the inputs are still checked against the traces but not kept (only a gate needs them)."""
    scores = traces.scores if isinstance(traces, StoredTraces) else None
    complete = isinstance(scores, SourceScores) and scores.count == len(traces)
    if isinstance(scores, SourceScores) and complete and scores.suite is scenarios:
        # Scored as each trace was written (harness._source_scores): no file is read again.
        # Their inputs were digested from these very scenario objects as they ran; only a gate
        # needs them kept, and reads them from the traces.
        inputs = run_inputs(scenarios, traces) if keep_inputs else {}
        return Scored(scores.checks, scores.coverage(), inputs)
    by_id = scenario_finder(scenarios)
    # A streamed run's checks stream to disk too: nothing is kept per scenario in memory.
    stored = StoredChecks() if isinstance(traces, StoredTraces) else None
    checks: list[CheckResult] = []
    inputs_check = _InputsCheck(keep=keep_inputs)
    use_of = PolicyUses()

    def each_use() -> Iterator[PolicyUse]:
        for trace in traces:
            item = _scenario_of(by_id, trace)
            found = expand_checks(item.scenario, trace)
            if stored is not None:
                stored.add_group(trace.scenario_id, found)
            else:
                checks.extend(found)
            inputs_check.add(item, trace)
            yield use_of(item, trace)

    coverage = measure(each_use())
    return Scored(checks if stored is None else stored, coverage, inputs_check.result(traces))


def assemble(
    run_id: str,
    scenarios: Sequence[LoadedScenario],
    traces: Sequence[Trace],
    *,
    baseline: Baseline | None = None,
    baseline_traces: Mapping[str, Mapping[str, Any]] | None = None,
    acknowledged: Mapping[tuple[str, str], str] | None = None,
    selected: Selected | None = None,
) -> SuiteResult:
    """Score the traces and, with a baseline, gate them.

    A focused run (`selected`: what `--id`/`-k`/`--tag`/`--limit` chose) is gated against the
    baseline's entries for the selected scenarios only (`harness._partial`).

    The gated rates cover only the scenarios the baseline knows: a new scenario's failing check
    is a failed check (exit 1), not a regression, since the baseline never had it passing. A new
    failing expectation in a known scenario does lower a gated rate (exit 2): it is strict.
    """
    scored = score_in_one_pass(scenarios, traces, keep_inputs=baseline is not None)
    checks, coverage, inputs = scored.checks, scored.coverage, scored.inputs
    metrics = compute_metrics(checks)
    gate_result = None
    full_baseline = baseline
    if baseline is not None and selected is not None:
        baseline = narrowed_baseline(baseline, selected.ids)
    if baseline is not None:
        known = set(baseline.scenarios)
        known_metrics = compute_metrics(c for c in checks if c.scenario_id in known)
        digests = (
            traces.digests
            if isinstance(traces, StoredTraces)
            else {t.scenario_id: t.digest for t in traces}
        )
        gate_result = gate(
            known_metrics,
            inventory_of(checks),
            digests,
            baseline,
            current_traces=LazyStableTraces(traces),
            baseline_traces=baseline_traces,
            current_coverage={
                c.policy_file: CoverageState(c.covered, c.uncovered) for c in coverage
            },
            current_inputs=inputs,
            acknowledged=acknowledged,
        )
        if full_baseline is not None and full_baseline is not baseline:
            gate_result = with_unrecorded_metric_drops(
                gate_result, full_baseline, baseline, known_metrics
            )
    return SuiteResult(
        run_id=run_id,
        traces=traces if isinstance(traces, StoredTraces) else tuple(traces),
        checks=checks if isinstance(checks, StoredChecks) else tuple(checks),
        metrics=metrics,
        baseline_metrics=metric_results(baseline) if baseline is not None else None,
        gate=gate_result,
        scenario_files=scenario_files(scenarios),
        coverage=coverage,
        selected=selected,
    )


def scenario_files(scenarios: Sequence[LoadedScenario]) -> Mapping[str, str]:
    """scenario id -> the file it came from, as traces show it."""
    if isinstance(scenarios, CheckedSuite):
        return _SuiteFiles(scenarios)
    return {item.scenario_id: item.display_path for item in scenarios}


class _SuiteFiles(Mapping[str, str]):
    """A checked suite's scenario files, looked up without reading a scenario back."""

    def __init__(self, suite: CheckedSuite) -> None:
        self._suite = suite

    def __getitem__(self, scenario_id: str) -> str:
        found = self._suite.display_path_of(scenario_id)
        if found is None:
            raise KeyError(scenario_id)
        return found

    def __iter__(self) -> Iterator[str]:
        return self._suite.ids()

    def __len__(self) -> int:
        return len(self._suite)


def measure_coverage(
    scenarios: Sequence[LoadedScenario], traces: Sequence[Trace]
) -> tuple[PolicyCoverage, ...]:
    """Coverage of every policy file at least one scenario runs with, from the traces (read one
    at a time: a streamed run's traces are never all in memory)."""
    return measure(_policy_uses(scenarios, traces))


def _policy_uses(
    scenarios: Sequence[LoadedScenario], traces: Sequence[Trace]
) -> Iterator[PolicyUse]:
    by_id = scenario_finder(scenarios)
    use_of = PolicyUses()
    for trace in traces:
        item = by_id(trace.scenario_id)
        if item is not None:
            yield use_of(item, trace)


def run_inputs(
    scenarios: Sequence[LoadedScenario], traces: Sequence[Trace]
) -> dict[str, ScenarioInputs]:
    """Each traced scenario's inputs: its definition now, with the policy, registry and
    provider its trace ran with. They must be what the trace says it ran with, or the scenario
    files are not the ones the run used (a usage problem: score the right files, or re-run)."""
    by_id = scenario_finder(scenarios)
    inputs = _InputsCheck()
    for trace in traces:
        loaded = by_id(trace.scenario_id)
        if loaded is not None:  # else `score` names it
            inputs.add(loaded, trace)
    return inputs.result(traces)


class _InputsCheck:
    """Scenario inputs gathered trace by trace; the stale ones are named all at once."""

    def __init__(self, *, keep: bool = True) -> None:
        self.found: dict[str, ScenarioInputs] = {}
        self.stale: list[str] = []
        self.keep = keep  # each holds its scenario's definition: ~1.5 KB a scenario

    def add(self, loaded: LoadedScenario, trace: Trace) -> None:
        inputs = scenario_inputs(
            loaded.scenario,
            provider=trace.provider.model_dump(mode="json"),
            policy_digest=trace.policy_digest,
            registry_digest=trace.registry_digest,
            mcp_config_digest=mcp_config_digest(loaded),
        )
        if inputs.digest != trace.inputs_digest:
            self.stale.append(f"{trace.scenario_id} ({loaded.path}:{loaded.line})")
        if self.keep:
            self.found[trace.scenario_id] = inputs

    def result(self, traces: Sequence[Trace]) -> dict[str, ScenarioInputs]:
        if self.stale:
            raise UsageProblem(
                f"the scenario files are not the ones run {_run_of(traces)} used: the inputs "
                f"of {', '.join(self.stale)} changed since; re-run the suite (`proctor run`), "
                "or point --scenarios at the files the run used"
            )
        return self.found


def _run_of(traces: Sequence[Trace]) -> str:
    return traces[0].run_id if traces else "(empty)"


def planned_inputs(
    scenarios: Sequence[LoadedScenario], provider: Mapping[str, Any] | None = None
) -> dict[str, ScenarioInputs]:
    """The inputs a replay run of `scenarios` will have, known before running anything; with
    `provider`, the inputs as that provider record (a live baseline passes one without the
    model, so a scenario's inputs do not change with the model measured)."""
    policies: dict[Path, str] = {}
    found: dict[str, ScenarioInputs] = {}
    for item in scenarios:
        path = resolve_policy_path(item)
        if path not in policies:
            policies[path] = load_policy(path).digest
        record = (
            identity_record(ReplayProvider(item.scenario.script).identity)
            if provider is None
            else provider
        )
        found[item.scenario.id] = scenario_inputs(
            item.scenario,
            provider=record,
            policy_digest=policies[path],
            registry_digest=registry_for(item).digest,
            mcp_config_digest=mcp_config_digest(item),
        )
    return found


def exit_code(result: SuiteResult, *, fail_on_drift: bool = False) -> int:
    """The run's exit code (`SuiteResult.exit_code`), drift failing only when asked."""
    return result.exit_code(fail_on_drift=fail_on_drift)


def trace_names(scenarios: Sequence[LoadedScenario]) -> Mapping[str, str]:
    """scenario id -> its trace file's name (`trace_filenames`); for a checked suite, only the
    names other than `<id>.json` are kept, the rest computed when asked for."""
    if not isinstance(scenarios, CheckedSuite):
        return trace_filenames([s.scenario_id for s in scenarios])
    names = trace_filenames(list(scenarios.ids()))
    odd = {sid: name for sid, name in names.items() if name != f"{sid}.json"}
    return _TraceNames(scenarios, odd)


class _TraceNames(Mapping[str, str]):
    def __init__(self, suite: CheckedSuite, odd: dict[str, str]) -> None:
        self._suite, self._odd = suite, odd

    def __getitem__(self, scenario_id: str) -> str:
        if self._suite.display_path_of(scenario_id) is None:
            raise KeyError(scenario_id)
        return self._odd.get(scenario_id) or f"{scenario_id}.json"

    def __iter__(self) -> Iterator[str]:
        return self._suite.ids()

    def __len__(self) -> int:
        return len(self._suite)


@dataclass(frozen=True, slots=True)
class SuiteRun:
    scenarios: Sequence[LoadedScenario]
    traces: Sequence[Trace]  # a StoredTraces when the run streamed them to a directory
    run_id: str


def run_checked_suite(
    scenarios: Sequence[LoadedScenario],
    *,
    provider: ProviderChoice,
    jobs: int = 1,
    run_id: str | None = None,
    progress: Progress | None = None,
    trace_dir: Path | None = None,
    telemetry: Telemetry | None = None,
) -> SuiteRun:
    """Run the suite. With `trace_dir`, traces stream to their files there as scenarios finish
    (the reports directory's `traces/`), so memory does not grow with the suite. With
    `telemetry` (--otel) every scenario's run is exported; the traces are the same either way."""
    run_id = run_id or new_run_id()
    if provider.kind == "replay":
        scenarios = replayable(scenarios)  # live-only scenarios have no script to replay
    store = None
    if trace_dir is not None:
        store = StoredTraces(trace_dir, trace_names(scenarios))
        store.scores = SourceScores(scenarios)  # each trace scored where it is written
    traces = run_suite(
        scenarios,
        run_id=run_id,
        provider=provider,
        jobs=jobs,
        progress=progress,
        store=store,
        telemetry=telemetry,
    )
    return SuiteRun(scenarios=scenarios, traces=traces, run_id=run_id)
