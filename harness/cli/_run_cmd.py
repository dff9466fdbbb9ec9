"""`proctor run`: the suite, scored, gated against the baseline, reported."""

from __future__ import annotations

from pathlib import Path

import click

from harness import _exit_codes as codes
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
from harness.cli._options import DEFAULT_BASELINE, DEFAULT_SCENARIOS, suite_options
from harness.providers._settings import resolve_settings
from harness.reports._write import prepare_report_dir


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
def run_command(
    scenario_paths: tuple[Path, ...],
    tags: tuple[str, ...],
    jobs: int,
    provider: str,
    baseline_path: Path | None,
    baseline_ref: str | None,
    no_baseline: bool,
    report_dir: Path | None,
    fail_on_drift: bool,
    record_dir: Path | None,
    record_missing: bool,
) -> int:
    """Run the scenario suite through the governed loop and gate it against the baseline.

    Exit codes: 0 clean, 1 a check failed, 2 a gated metric regressed or a scenario's inputs
    changed since the baseline (or behaviour drift with --fail-on-drift), 3 the suite is
    invalid (nothing ran), 64 a usage error, 77 a live provider has no credential.

    Cassettes: `--provider stub|openai --record cassettes/NAME/` keeps each scenario's provider
    exchanges; `--provider cassette:cassettes/NAME/` replays them with no network. A request
    that differs from the recorded one fails that scenario's `cassette` check (exit 1, the
    rest still runs), naming the turn, with a diff; an unreadable cassette file exits 3.
    """
    check_combination(provider, record_dir, record_missing)
    scenarios = load_checked_suite(list(scenario_paths) or [DEFAULT_SCENARIOS], tags)
    replayed = cassette_of(provider)
    if replayed is not None or record_missing:  # a bad file is named before anything runs
        check_cassette_files(replayed or record_dir or Path(), scenarios.ids())
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
            stub = ProviderChoice("openai", settings, record_dir, record_missing)
            run = run_checked_suite(
                scenarios, provider=stub, jobs=1,
                run_id=run_id, progress=_progress, trace_dir=trace_dir,
            )  # fmt: skip
    else:
        choice = ProviderChoice("cassette", cassette=replayed) if replayed else ProviderChoice()
        if provider == "openai":
            live = resolve_settings()
            if live is None:  # the credential went away since the check above
                click.echo("SKIPPED: no live credential (set PROCTOR_LLM_API_KEY)")
                return codes.SKIPPED
            choice = ProviderChoice("openai", live, record_dir, record_missing)
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
    )
    if replayed is not None or record_dir is not None:
        report_misses(result.checks)
    if record_dir is not None:
        click.echo(f"cassette: {record_dir} (replay with --provider cassette:{record_dir})")
    return finish(result, report_dir, fail_on_drift=fail_on_drift)


def _progress(done: int, total: int, trace: Finished) -> None:
    click.echo(f"[{done:>3}/{total}] {trace.scenario_id:<48} {trace.status}", err=True)
