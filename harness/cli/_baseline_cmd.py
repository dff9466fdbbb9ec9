"""`proctor baseline record`: a new baseline, deliberately."""

from __future__ import annotations

from pathlib import Path

import click

from governance import SystemClock
from harness import _exit_codes as codes
from harness._baseline import (
    baseline_diff,
    build_baseline,
    failing_checks,
    load_baseline,
    load_baseline_traces,
    record_refusals,
    write_baseline,
    write_baseline_traces,
)
from harness._runner import ProviderChoice
from harness._suite import load_checked_suite, measure_coverage, run_checked_suite, score
from harness.cli._app import cli
from harness.cli._options import DEFAULT_BASELINE, DEFAULT_SCENARIOS


@cli.group("baseline")
def baseline_group() -> None:
    """The recorded baseline the gate compares against."""


@baseline_group.command("record")
@click.option(
    "--scenarios",
    "scenario_paths",
    type=click.Path(exists=True, path_type=Path),
    multiple=True,
    help="Scenario file or directory (repeatable) [default: scenarios/].",
)
@click.option(
    "--baseline",
    "baseline_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=DEFAULT_BASELINE,
    show_default=True,
)
@click.option("--reason", required=True, help="Why the baseline changes: kept in its history.")
@click.option(
    "--allow-regression",
    is_flag=True,
    help="Record even if a rate falls, a total shrinks or a check disappears "
    "(said loudly in the file's history).",
)
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True)
def record_command(
    scenario_paths: tuple[Path, ...],
    baseline_path: Path,
    reason: str,
    allow_regression: bool,
    jobs: int,
) -> int:
    """Run the suite (replay) and record it as the new baseline.

    Refuses while any check fails or the contract is broken, prints the diff against the old
    baseline, and refuses to lower a rate, shrink a total or drop a check unless
    --allow-regression is given.
    """
    scenarios = load_checked_suite(list(scenario_paths) or [DEFAULT_SCENARIOS])
    run = run_checked_suite(scenarios, provider=ProviderChoice(), jobs=jobs)
    checks, metrics = score(scenarios, run.traces)
    failing = failing_checks(checks)
    if failing:
        click.echo(f"refused: {len(failing)} check(s) fail; fix them before recording:", err=True)
        for check in failing:
            click.echo(f"  {check.scenario_id}: {check.id}: {check.why}", err=True)
        return codes.CHECK_FAILED
    previous = load_baseline(baseline_path) if baseline_path.is_file() else None
    new = build_baseline(
        checks,
        metrics,
        run.traces,
        reason=reason,
        clock=SystemClock(),
        previous=previous,
        allow_regression=allow_regression,
        coverage=measure_coverage(scenarios, run.traces),
    )
    click.echo(baseline_diff(previous, new))
    refusals = record_refusals(new, previous)
    if refusals and not allow_regression:
        click.echo("refused: the new baseline would weaken the gate:", err=True)
        for refusal in refusals:
            click.echo(f"  {refusal}", err=True)
        click.echo("(re-run with --allow-regression to record it anyway)", err=True)
        return codes.REGRESSED
    if refusals:
        click.echo("WARNING: recording a WEAKER baseline (--allow-regression):", err=True)
        for refusal in refusals:
            click.echo(f"  {refusal}", err=True)
    write_baseline(new, baseline_path)
    write_baseline_traces(run.traces, baseline_path.parent / "traces")
    kept = len(load_baseline_traces(baseline_path.parent / "traces"))
    click.echo(f"recorded {baseline_path} ({len(new.scenarios)} scenarios, {kept} traces)")
    return codes.OK
