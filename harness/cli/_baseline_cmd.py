"""`proctor baseline record`: a new baseline, deliberately."""

from __future__ import annotations

from pathlib import Path

import click

from governance import SystemClock
from harness import _exit_codes as codes
from harness._baseline import (
    AcceptedChange,
    load_baseline,
    load_baseline_traces,
    write_baseline,
    write_baseline_traces,
)
from harness._baseline_record import baseline_diff, build_baseline, failing_checks, record_refusals
from harness._errors import UsageProblem
from harness._gate import input_changes
from harness._results import InputChange
from harness._scenario_runner import ProviderChoice
from harness._suite import (
    load_checked_suite,
    measure_coverage,
    planned_inputs,
    run_checked_suite,
    run_inputs,
    score,
)
from harness.cli._live_run import (
    allow_other_model_option,
    record_live,
    stub_fault_option,
    without_live_only,
)
from harness.cli._options import DEFAULT_BASELINE, DEFAULT_SCENARIOS


@click.group("baseline")
def baseline_group() -> None:
    """The recorded baseline the gate compares against."""


def _whole_suite_only(ctx: click.Context, param: click.Parameter, value: object) -> object:
    """The selectors of a focused run, refused: a baseline records the whole suite, since
    whatever a partial recording left out would silently stop being gated."""
    if value not in (None, ()):
        flag = param.opts[0]
        raise click.UsageError(
            f"{flag}: a baseline records the whole suite; a partial run (--id, -k, --tag, "
            "--limit) cannot record one. Drop the selector, or narrow the suite itself with "
            "--scenarios DIR and a --baseline of its own.",
            ctx=ctx,
        )
    return value


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
@click.option(
    "--accept-changed",
    "accept_changed",
    multiple=True,
    metavar="ID",
    help="Acknowledge that this scenario's inputs changed (repeatable); kept in the history.",
)
@click.option(
    "--accept-all-changed",
    is_flag=True,
    help="Acknowledge every scenario whose inputs changed (each is named in the history).",
)
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--id", "refused_ids", multiple=True, hidden=True, callback=_whole_suite_only)
@click.option("-k", "refused_expression", hidden=True, callback=_whole_suite_only)
@click.option("--tag", "refused_tags", multiple=True, hidden=True, callback=_whole_suite_only)
@click.option("--limit", "refused_limit", hidden=True, callback=_whole_suite_only)
@click.option(
    "--live",
    is_flag=True,
    help="Record a live model's baseline (baselines/live/<model>.json) from --repeat K live "
    "runs of scenarios/live/ (or --scenarios), apart from the deterministic baseline.",
)
@click.option(
    "--provider", type=click.Choice(["stub", "openai"]), default=None, help="With --live."
)
@click.option(
    "--repeat", type=click.IntRange(min=1), default=5, show_default=True, help="With --live."
)
@click.option(
    "--live-baseline",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --live: where to record [default: baselines/live/<model>.json].",
)
@stub_fault_option
@allow_other_model_option
def record_command(
    scenario_paths: tuple[Path, ...],
    baseline_path: Path,
    reason: str,
    allow_regression: bool,
    accept_changed: tuple[str, ...],
    accept_all_changed: bool,
    jobs: int,
    live: bool,
    provider: str | None,
    repeat: int,
    live_baseline: Path | None,
    stub_fault: str | None,
    allow_other_model: bool,
    **_refused: object,
) -> int:
    """Run the suite (replay) and record it as the new baseline.

    Refuses while any check fails or the contract is broken, prints the diff against the old
    baseline, refuses to lower a rate, shrink a total or drop a check unless
    --allow-regression is given, and refuses to record a scenario whose inputs changed (a
    different test under the same id) unless it is acknowledged with --accept-changed ID or
    --accept-all-changed. The input checks run before the suite does.
    """
    if not reason.strip():
        raise click.BadParameter(
            "is blank; say why the baseline changes (it is kept in the baseline's history), "
            "e.g. --reason 'refund scenarios added'",
            param_hint="--reason",
        )
    live_flags = (provider, live_baseline, stub_fault)
    if live or allow_other_model or any(flag is not None for flag in live_flags):
        if not live or provider is None:
            raise click.UsageError(
                "a live baseline is recorded with --live --provider openai|stub "
                "(--repeat, --live-baseline, --stub-fault and --allow-other-model go with them)"
            )
        return record_live(
            scenario_paths, provider=provider, repeat=repeat, reason=reason,
            live_baseline=live_baseline, allow_regression=allow_regression,
            stub_fault=stub_fault, allow_other_model=allow_other_model,
        )  # fmt: skip
    scenarios = without_live_only(load_checked_suite(list(scenario_paths) or [DEFAULT_SCENARIOS]))
    previous = load_baseline(baseline_path) if baseline_path.is_file() else None
    planned = planned_inputs(scenarios)
    changed = input_changes(previous, planned, {}) if previous is not None else []
    unacknowledged = _unacknowledged(changed, accept_changed, accept_all_changed)
    if unacknowledged:
        click.echo("\n".join(unacknowledged), err=True)
        return codes.REGRESSED
    if changed:
        click.echo(f"inputs changed ({len(changed)}), acknowledged:")
        for change in changed:
            click.echo(f"  {change.scenario_id}")
            click.echo("\n".join(f"    {line}" for line in change.diff.splitlines()))
    run = run_checked_suite(scenarios, provider=ProviderChoice(), jobs=jobs)
    checks, metrics = score(scenarios, run.traces)
    failing = failing_checks(checks)
    if failing:
        click.echo(f"refused: {len(failing)} check(s) fail; fix them before recording:", err=True)
        for check in failing:
            click.echo(f"  {check.scenario_id}: {check.id}: {check.why}", err=True)
        return codes.CHECK_FAILED
    inputs = run_inputs(scenarios, run.traces)
    if {s: i.digest for s, i in inputs.items()} != {s: i.digest for s, i in planned.items()}:
        raise UsageProblem(
            "a scenario, policy or MCP config file changed while the suite ran; record again"
        )
    new = build_baseline(
        checks,
        metrics,
        run.traces,
        reason=reason,
        clock=SystemClock(),
        previous=previous,
        allow_regression=allow_regression,
        coverage=measure_coverage(scenarios, run.traces),
        inputs=inputs,
        accepted=[
            AcceptedChange(
                scenario=c.scenario_id, inputs_digest=c.new_digest, previous_digest=c.old_digest
            )
            for c in changed
        ],
    )
    if new is previous:
        click.echo(f"baseline unchanged: {baseline_path} already records this run")
        return codes.OK
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


def _unacknowledged(
    changed: list[InputChange], accepted: tuple[str, ...], accept_all: bool
) -> list[str]:
    """Why recording is refused (empty: it is not): a changed scenario not acknowledged.

    Acknowledging a scenario whose inputs did not change is a usage error (a typo or a stale
    flag would otherwise hide the one that needed it).
    """
    ids = [c.scenario_id for c in changed]
    shown = ", ".join(ids) or "none"
    stray = sorted(set(accepted) - set(ids))
    if stray:
        raise click.BadParameter(
            f"{', '.join(stray)}: no such scenario has changed inputs (changed: {shown}); "
            "acknowledge only the scenarios listed",
            param_hint="--accept-changed",
        )
    missing = [c for c in changed if not accept_all and c.scenario_id not in accepted]
    if not missing:
        return []
    lines = [
        f"refused: {len(missing)} scenario(s) changed their inputs: the same ids, a different "
        "test. Review each change:"
    ]
    for change in missing:
        lines.append(f"  {change.scenario_id}")
        lines += [f"    {line}" for line in change.diff.splitlines()]
    flags = " ".join(f"--accept-changed {c.scenario_id}" for c in missing)
    lines.append(f"(re-run with {flags}, or --accept-all-changed, to record them)")
    return lines
