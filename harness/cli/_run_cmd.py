"""`proctor run`: the suite, scored, gated against the baseline, reported."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness import _exit_codes as codes
from harness._scenario_runner import ProviderChoice
from harness._suite import assemble, load_checked_suite, new_run_id, run_checked_suite
from harness._suite_workers import Finished
from harness.cli._eval_common import (
    acknowledgements,
    baseline_from_file,
    baseline_from_ref,
    finish,
)
from harness.cli._options import DEFAULT_BASELINE, DEFAULT_SCENARIOS, suite_options
from harness.providers._settings import resolve_settings
from harness.reports._write import prepare_report_dir

if TYPE_CHECKING:
    from harness._select import Selection


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
@click.option(
    "--provider",
    type=click.Choice(["replay", "openai", "stub"]),
    default="replay",
    show_default=True,
    help="replay: the scripts (deterministic); openai: PROCTOR_LLM_*; "
    "stub: the bundled vendor stub.",
)
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
) -> int:
    """Run the scenario suite through the governed loop and gate it against the baseline.

    Exit codes: 0 clean, 1 a check failed, 2 a gated metric regressed or a scenario's inputs
    changed since the baseline (or behaviour drift with --fail-on-drift), 3 the suite is
    invalid (nothing ran), 64 a usage error, 77 a live provider has no credential.
    """
    scenarios = load_checked_suite(list(scenario_paths) or [DEFAULT_SCENARIOS], selection=selection)
    baseline = traces = None
    acknowledged: dict[tuple[str, str], str] = {}
    if not no_baseline:
        if baseline_ref is not None:
            baseline, traces = baseline_from_ref(baseline_ref, baseline_path or DEFAULT_BASELINE)
            acknowledged = acknowledgements(baseline, baseline_path or DEFAULT_BASELINE)
        elif baseline_path is not None or DEFAULT_BASELINE.is_file():
            baseline, traces = baseline_from_file(baseline_path or DEFAULT_BASELINE)
    if provider == "openai" and resolve_settings() is None:
        click.echo("SKIPPED: no live credential (set PROCTOR_LLM_API_KEY)")
        return codes.SKIPPED
    run_id = new_run_id()
    report_dir = report_dir or Path("reports") / run_id
    # Traces stream into the report's traces/ as scenarios finish: memory stays flat.
    trace_dir = prepare_report_dir(report_dir)
    if provider == "stub":
        from harness.providers import ProviderSettings
        from stubs.openai_stub import running_stub

        with running_stub() as url:
            settings = ProviderSettings(base_url=url, model="proctor-stub-1", api_key="stub")
            run = run_checked_suite(
                scenarios, provider=ProviderChoice("openai", settings), jobs=1,
                run_id=run_id, progress=_progress, trace_dir=trace_dir,
            )  # fmt: skip
    else:
        choice = ProviderChoice()
        if provider == "openai":
            live = resolve_settings()
            if live is None:  # the credential went away since the check above
                click.echo("SKIPPED: no live credential (set PROCTOR_LLM_API_KEY)")
                return codes.SKIPPED
            choice = ProviderChoice("openai", live)
        run = run_checked_suite(
            scenarios,
            provider=choice,
            jobs=jobs,
            run_id=run_id,
            progress=_progress,
            trace_dir=trace_dir,
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
    return finish(result, report_dir, fail_on_drift=fail_on_drift)


def _progress(done: int, total: int, trace: Finished) -> None:
    click.echo(f"[{done:>3}/{total}] {trace.scenario_id:<48} {trace.status}", err=True)
