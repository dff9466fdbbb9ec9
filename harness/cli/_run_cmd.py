"""`proctor run`: the suite, scored, gated against the baseline, reported."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness._helper_cores import helper_processes
from harness._scenario_load import IMPORTED_DIR
from harness._scenario_runner import ProviderChoice
from harness._suite import assemble, load_checked_suite, new_run_id, run_checked_suite
from harness._suite_workers import Finished
from harness.cli._cassette_options import (
    cassette_of,
    check_cassette_files,
    check_combination,
    provider_options,
    report_misses,
)
from harness.cli._eval_common import (
    acknowledgements,
    baseline_from_file,
    baseline_from_ref,
    finish,
)
from harness.cli._live_run import (
    allow_other_model_option,
    default_live_scenarios,
    live_command,
    refuse_pointless_repeat,
    stub_fault_option,
    without_live_only,
)
from harness.cli._options import DEFAULT_BASELINE, DEFAULT_SCENARIOS, suite_options
from harness.cli._otel import otel_option
from harness.cli._shard_run import RunOptions, refuse_shard_combination, run_shard, shard_option
from harness.reports._write import prepare_report_dir

if TYPE_CHECKING:
    from collections.abc import Sequence

    from governance.telemetry import Telemetry
    from harness._scenario_load import LoadedScenario
    from harness._select import Selection
    from harness._shard import Shard


@click.command("run")
@suite_options
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Scenarios run in this many processes (traces are identical either way).",
)
@provider_options
@click.option(
    "--baseline",
    "baseline_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help=f"Gate against this baseline [default: {DEFAULT_BASELINE} if present].",
)
@click.option(
    "--baseline-ref",
    default=None,
    help="Read the baseline from this git ref (e.g. origin/main) instead of the work tree.",
)
@click.option("--no-baseline", is_flag=True, help="Score only; do not gate.")
@click.option(
    "--report-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the reports go [default: reports/<run id>].",
)
@click.option(
    "--fail-on-drift",
    is_flag=True,
    help="Exit 2 when a scenario's trace changed, even if nothing regressed.",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="K",
    help="Live providers only: run each scenario K times; reports show pass@k, pass^k and "
    "each metric's Wilson 95% interval.",
)
@click.option(
    "--live-baseline",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Live runs: gate against this live baseline [default: baselines/live/<model>.json].",
)
@click.option(
    "--policy",
    "policy_override",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="Run every scenario under this policy file instead of the one it names: a what-if "
    "comparison (e.g. scenarios/policies/agentdojo/allow-all.yaml). Each scenario's inputs "
    "change with it, so against a baseline they are reported as changed.",
)
@stub_fault_option
@allow_other_model_option
@shard_option
@otel_option("eval")
def run_command(
    scenario_paths: tuple[Path, ...],
    selection: Selection,
    jobs: int,
    provider: str,
    baseline_path: Path | None,
    baseline_ref: str | None,
    no_baseline: bool,
    report_dir: Path | None,
    fail_on_drift: bool,
    record_dir: Path | None,
    record_missing: bool,
    repeat: int,
    live_baseline: Path | None,
    stub_fault: str | None,
    allow_other_model: bool,
    shard: Shard | None,
    telemetry: Telemetry | None,
    policy_override: Path | None = None,
) -> int:
    """Run the scenario suite through the governed loop and gate it against the baseline.

    Exit codes: 0 clean, 1 a check failed, 2 a gated metric regressed or a scenario's inputs
    changed since the baseline (or behaviour drift with --fail-on-drift), 3 the suite is
    invalid (nothing ran), 64 a usage error, 77 a live provider has no credential.

    A live provider (openai, stub) runs scenarios/live/ by default and is gated against the
    model's live baseline, never the deterministic one. With a live baseline the live gate
    decides: 0 it passed (failed repeats are the measurement, in the reports), 2 it failed (a
    rate's interval fell below, or a baseline scenario, check or metric is missing, or inputs
    changed); a baseline of another model is a usage error unless --allow-other-model. Without
    one (NOT GATED) the checks decide: 0 or 1. Scenarios without a script (live-only) are left
    out of a replay run.

    Cassettes: `--provider stub|openai --record cassettes/NAME/` keeps each scenario's provider
    exchanges; `--provider cassette:cassettes/NAME/` replays them with no network (the same
    scenarios as the live run: scenarios/live/ by default). A request that differs from the
    recorded one fails that scenario's `cassette` check (exit 1, the rest still runs), naming
    the turn, with a diff; an unreadable cassette file exits 3. A cassette replay is gated only
    against a baseline given with --baseline.
    """
    check_combination(provider, record_dir, record_missing)
    refuse_shard_combination(shard, provider, record_dir)
    if shard is not None and policy_override is not None:
        raise click.UsageError(
            "--policy is a what-if run; `proctor merge` re-scores shards against the scenario "
            "files as they are, so a shard cannot take --policy: run it whole"
        )
    refuse_pointless_repeat(provider, repeat)
    if record_dir is not None and repeat > 1:
        raise click.UsageError(
            "--record keeps one run per scenario: drop --repeat (record once, replay the "
            "cassette; repeat the live run without --record)"
        )
    if provider in ("openai", "stub"):
        if baseline_path is not None or baseline_ref is not None:
            raise click.UsageError(
                "a live run is gated against the model's live baseline (--live-baseline, default "
                "baselines/live/<model>.json), never the deterministic --baseline/--baseline-ref"
            )
        return live_command(
            scenario_paths, selection, provider=provider, repeat=repeat, jobs=jobs,
            live_baseline=live_baseline, no_baseline=no_baseline, report_dir=report_dir,
            stub_fault=stub_fault, record_dir=record_dir, record_missing=record_missing,
            allow_other_model=allow_other_model, policy_override=policy_override,
            telemetry=telemetry,
        )  # fmt: skip
    if live_baseline is not None or stub_fault is not None or allow_other_model:
        raise click.UsageError(
            "--live-baseline, --stub-fault and --allow-other-model are for live providers "
            "(--provider openai|stub)"
        )
    replayed = cassette_of(provider)
    # Checking half of a cold suite's files and writing report.html may take a second core even
    # when the scenarios run one at a time (harness._helper_cores); the output is the same.
    helpers = helper_processes(jobs)
    if replayed is None:
        scenarios = without_live_only(
            load_checked_suite(
                list(scenario_paths) or [DEFAULT_SCENARIOS],
                selection=selection,
                jobs=helpers,
                policy_override=policy_override,
            )
        )
    else:  # the live run's scenarios, live-only ones included; every file read before running
        scenarios = load_checked_suite(
            list(scenario_paths) or [default_live_scenarios()],
            selection=selection,
            policy_override=policy_override,
        )
        check_cassette_files(replayed, scenarios.ids())
        if baseline_path is None and baseline_ref is None and not no_baseline:
            click.echo(
                "NOT GATED: a cassette replay is a recorded live run; the deterministic baseline "
                "holds the scripted runs (pass --baseline FILE to gate against one)"
            )
            no_baseline = True
    for root in list(scenario_paths) or [DEFAULT_SCENARIOS]:
        if root.is_dir() and (root / IMPORTED_DIR).is_dir():
            click.echo(
                f"note: {root / IMPORTED_DIR}/ (imported AgentDojo scenarios) is left out when "
                f"its parent is run; run it with --scenarios {root / IMPORTED_DIR}"
            )
    if shard is not None:  # scored, not gated: `proctor merge` gates (harness/cli/_shard_run.py)
        options = RunOptions(provider, scenario_paths, selection, baseline_path, baseline_ref,
                             no_baseline, fail_on_drift)  # fmt: skip
        return run_shard(shard, scenarios, options, jobs=jobs, report_dir=report_dir,
                         progress=_progress, telemetry=telemetry)  # fmt: skip
    baseline = traces = None
    acknowledged: dict[tuple[str, str], str] = {}
    if not no_baseline:
        if baseline_ref is not None:
            baseline, traces = baseline_from_ref(baseline_ref, baseline_path or DEFAULT_BASELINE)
            acknowledged = acknowledgements(baseline, baseline_path or DEFAULT_BASELINE)
        elif baseline_path is not None or DEFAULT_BASELINE.is_file():
            baseline, traces = baseline_from_file(baseline_path or DEFAULT_BASELINE)
    run_id = new_run_id()
    report_dir = report_dir or Path("reports") / run_id
    # Traces stream into the report's traces/ as scenarios finish: memory stays flat.
    trace_dir = prepare_report_dir(report_dir)
    choice = ProviderChoice("cassette", cassette=replayed) if replayed else ProviderChoice()
    run = run_checked_suite(
        scenarios,
        provider=choice,
        jobs=jobs,
        run_id=run_id,
        progress=_progress,
        trace_dir=trace_dir,
        telemetry=telemetry,
    )
    result = assemble(
        run.run_id,
        scenarios,
        run.traces,
        baseline=baseline,
        baseline_traces=traces,
        acknowledged=acknowledged,
        selected=scenarios.selected,
    )
    if replayed is not None:
        report_misses(result.checks)
        _say_replay_only_skipped(scenarios)
    return finish(result, report_dir, fail_on_drift=fail_on_drift, jobs=helpers)


def _say_replay_only_skipped(scenarios: Sequence[LoadedScenario]) -> None:
    """A cassette replay scores like the live run it recorded: it skips replay-only
    expectations (harness._checks.model_answered) and says how many, as a live run does."""
    from harness._checks import replay_only_count

    skipped = sum(replay_only_count(s.scenario) for s in scenarios)
    if skipped:
        click.echo(
            f"{skipped} replay-only expectation(s) skipped (a cassette replays a live model's "
            "answers; they hold only for the scripted model)"
        )


def _progress(done: int, total: int, trace: Finished) -> None:
    click.echo(f"[{done:>3}/{total}] {trace.scenario_id:<48} {trace.status}", err=True)
