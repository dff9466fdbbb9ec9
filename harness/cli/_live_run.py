"""A live run of the suite (`proctor run --provider openai|stub [--repeat K]`): each scenario run
K times, every run a complete report of its own (`rN/`), the repeat statistics and the live
gate in the reports at the top, and a short terminal report.

Never gated against the deterministic baseline: a live model's answers are not the scripts',
so that comparison flags every scripted answer as a regression. Its gate is the model's own
live baseline (`baselines/live/<model>.json`, `harness._live_gate`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness._checks import replay_only_count
from harness._live_baseline import LiveBaseline, live_baseline_path, load_live_baseline
from harness._live_gate import LiveSummary, live_gate, live_metrics
from harness._metrics import compute_metrics
from harness._repeat_stats import scenario_repeats
from harness._repeat_values import ScenarioRepeats
from harness._results import CheckResult, SuiteResult
from harness._scenario_load import LoadedScenario
from harness._scenario_runner import ProviderChoice
from harness._suite import assemble, run_checked_suite
from harness._suite_check import CheckedSuite, replayable
from harness.providers._endpoint import endpoint_host
from harness.providers._settings import ProviderSettings, resolve_settings

if TYPE_CHECKING:
    from governance.telemetry import Telemetry
    from harness._select import Selection

LIVE_SCENARIOS = Path("scenarios/live")
# The provider in a live scenario's inputs digest: no model, so another model measures the same
# scenario (the model is checked on its own: `refuse_other_model`).
LIVE_INPUTS_PROVIDER = {"name": "live", "live": True}
ALLOW_OTHER_MODEL = "--allow-other-model"
STUB_MODEL = "proctor-stub-1"
REPLAY_REPEAT = (
    "--repeat needs a live provider (--provider openai or --provider stub): a replay run is "
    "deterministic, so K repeats would be K identical traces and say nothing more than one"
)
CASSETTE_REPEAT = (
    "--repeat cannot be used with a cassette provider: a cassette answers every repeat with "
    "the same recorded responses, so the repeats would be identical; repeat the live run "
    "instead (--provider openai --repeat K)"
)


def default_live_scenarios() -> Path:
    """scenarios/live/ (the family written for real models) when it exists, else scenarios/."""
    return LIVE_SCENARIOS if LIVE_SCENARIOS.is_dir() else LIVE_SCENARIOS.parent


def refuse_pointless_repeat(provider: str, repeat: int) -> None:
    """Usage error (exit 64) for repeats that cannot differ: replay and cassette providers."""
    if repeat <= 1:
        return
    if provider.startswith("cassette:"):
        raise click.UsageError(CASSETTE_REPEAT)
    if provider == "replay":
        raise click.UsageError(REPLAY_REPEAT)


def stub_model(provider: str, fault: str | None) -> str:
    """The stub's model id, with a fault suffix (`proctor-stub-1:flaky`) when one is asked."""
    if fault is None:
        return STUB_MODEL
    if provider != "stub":
        raise click.UsageError("--stub-fault is for --provider stub")
    from stubs.openai_stub import FAULTS

    if fault not in FAULTS:
        raise click.BadParameter(
            f"{fault!r} is not a stub fault; known: {', '.join(FAULTS)}", param_hint="--stub-fault"
        )
    return f"{STUB_MODEL}:{fault}"


def stub_fault_option(func: Any) -> Any:
    # A plain string checked when used: the stub's fault list loads its web stack.
    return click.option(
        "--stub-fault",
        metavar="FAULT",
        default=None,
        help="--provider stub only: the stub model misbehaves this way (e.g. flaky: declines "
        "every 5th time the same conversation opens).",
    )(func)


def allow_other_model_option(func: Any) -> Any:
    return click.option(
        ALLOW_OTHER_MODEL,
        is_flag=True,
        help="Live runs: use a live baseline recorded for another model (refused by default, "
        "exit 64); the report names both models.",
    )(func)


@contextmanager
def live_settings(provider: str, stub_model: str = STUB_MODEL) -> Iterator[ProviderSettings | None]:
    """The live endpoint: the bundled stub (started here, stopped after), or PROCTOR_LLM_*;
    None when openai has no credential (the caller exits 77)."""
    if provider == "stub":
        from stubs.openai_stub import running_stub

        with running_stub() as url:
            yield ProviderSettings(base_url=url, model=stub_model, api_key="stub")
        return
    yield resolve_settings()


@dataclasses.dataclass(frozen=True, slots=True)
class LiveRun:
    result: SuiteResult
    scenarios: tuple[ScenarioRepeats, ...]


def run_live(
    scenarios: Sequence[LoadedScenario],
    settings: ProviderSettings,
    *,
    repeat: int,
    run_id: str,
    report_dir: Path | None,
    jobs: int = 1,
    key: bytes | None = None,
    record_dir: Path | None = None,
    record_missing: bool = False,
    telemetry: Telemetry | None = None,
) -> LiveRun:
    """The suite run `repeat` times against `settings`; each run's reports in `report_dir/rN/`."""
    from harness.reports import write_reports
    from harness.reports._write import prepare_report_dir

    # --record DIR (one run only: the caller refuses it with --repeat) keeps the exchanges.
    choice = ProviderChoice("openai", settings, record_dir, record_missing)
    runs: list[list[CheckResult]] = []
    for n in range(1, repeat + 1):
        sub = None if report_dir is None else report_dir / f"r{n}"
        run = run_checked_suite(
            scenarios,
            provider=choice,
            jobs=jobs,
            run_id=f"{run_id}-r{n}",
            trace_dir=None if sub is None else prepare_report_dir(sub),
            telemetry=telemetry,
        )
        one = assemble(run.run_id, scenarios, run.traces)
        if sub is not None:
            write_reports(one, sub, key=key)
        checks = list(one.checks)
        runs.append(checks)
        failed = sum(not c.passed for c in checks)
        click.echo(
            f"run {n}/{repeat}: {len(checks) - failed}/{len(checks)} checks passed", err=True
        )
    # The scenarios' inputs without the model: a live baseline's "same scenario" test.
    from harness._suite import planned_inputs

    inputs = planned_inputs(scenarios, provider=LIVE_INPUTS_PROVIDER)
    stats = tuple(
        dataclasses.replace(s, inputs_digest=inputs[s.scenario_id].digest)
        for s in scenario_repeats(runs)
    )
    # Each run's checks under `<id>#rN`, so a failure in the top report names its run.
    pooled = tuple(
        dataclasses.replace(c, scenario_id=f"{c.scenario_id}#r{n}")
        for n, checks in enumerate(runs, start=1)
        for c in checks
    )
    summary = LiveSummary(
        model=settings.model,
        endpoint_host=endpoint_host(settings.base_url),
        repeat=repeat,
        scenarios=stats,
        metrics=live_metrics(stats),
        skipped_replay_only=sum(replay_only_count(s.scenario) for s in scenarios),
    )
    result = SuiteResult(
        run_id=run_id, traces=(), checks=pooled, metrics=compute_metrics(pooled), live_run=summary
    )
    return LiveRun(result, stats)


def refuse_other_model(
    recorded: LiveBaseline, model: str, path: Path, *, allow_other_model: bool
) -> str | None:
    """The baseline's model when it is not `model` and that is allowed; a usage error (64)
    naming both when it is not allowed; None when they match."""
    if recorded.model == model:
        return None
    if not allow_other_model:
        raise click.UsageError(
            f"the live baseline {path} was recorded for model {recorded.model!r}, not this "
            f"run's model {model!r}; one model's rates say nothing about another's. Use that "
            f"model's baseline, or pass {ALLOW_OTHER_MODEL} to compare them deliberately"
        )
    return recorded.model


def gate_live(
    run: LiveRun,
    baseline: Path | None,
    *,
    no_baseline: bool,
    partial: str | None = None,
    allow_other_model: bool = False,
) -> SuiteResult:
    """The run's result with its live gate, or with the one reason it is not gated."""
    summary = run.result.live_run
    assert summary is not None
    path = baseline or live_baseline_path(summary.model)
    if no_baseline:
        summary = dataclasses.replace(summary, not_gated_because="--no-baseline was given")
    elif not path.is_file():
        summary = dataclasses.replace(
            summary,
            not_gated_because=f"no live baseline for model {summary.model} ({path}); a live "
            "run is never gated against the deterministic replay baseline. Record one with "
            "`proctor baseline record --live --provider ... --repeat K --reason ...`",
        )
    else:
        recorded = load_live_baseline(path)
        other = refuse_other_model(
            recorded, summary.model, path, allow_other_model=allow_other_model
        )
        gated = live_gate(run.scenarios, recorded, str(path), partial=partial, other_model=other)
        summary = dataclasses.replace(summary, gate=gated)
    return dataclasses.replace(run.result, live_run=summary)


def live_command(
    scenario_paths: Sequence[Path],
    selection: Selection | None,
    *,
    provider: str,
    repeat: int,
    jobs: int,
    live_baseline: Path | None,
    no_baseline: bool,
    report_dir: Path | None,
    stub_fault: str | None = None,
    record_dir: Path | None = None,
    record_missing: bool = False,
    allow_other_model: bool = False,
    policy_override: Path | None = None,
    telemetry: Telemetry | None = None,
) -> int:
    """`proctor run` with a live provider: run K times, gate against the live baseline, report."""
    from harness import _exit_codes as codes
    from harness._suite import exit_code, load_checked_suite, new_run_id
    from harness.cli._eval_common import report_key
    from harness.reports import write_reports
    from harness.reports._live import render_live_terminal

    model = stub_model(provider, stub_fault)
    if provider == "openai" and resolve_settings() is None:  # before anything is read or run
        click.echo("SKIPPED: no live credential (set PROCTOR_LLM_API_KEY)")
        return codes.SKIPPED
    scenarios = load_checked_suite(
        list(scenario_paths) or [default_live_scenarios()],
        selection=selection,
        policy_override=policy_override,
    )
    # A baseline for another model is refused before anything runs (the stub's model is known
    # now; an openai model is the one PROCTOR_LLM_MODEL names).
    if not no_baseline:
        _check_baseline_model(provider, model, live_baseline, allow_other_model)
    if record_dir is not None and record_missing:  # every file it will fill reads, or exit 3
        from harness.cli._cassette_options import check_cassette_files

        check_cassette_files(record_dir, scenarios.ids(), filling=True)
    run_id = new_run_id()
    report_dir = report_dir or Path("reports") / run_id
    with live_settings(provider, model) as settings:
        if settings is None:  # the credential went away since the check above
            click.echo("SKIPPED: no live credential (set PROCTOR_LLM_API_KEY)")
            return codes.SKIPPED
        run = run_live(
            scenarios,
            settings,
            repeat=repeat,
            run_id=run_id,
            report_dir=report_dir,
            jobs=1 if provider == "stub" else jobs,
            key=report_key(),
            record_dir=record_dir,
            record_missing=record_missing,
            telemetry=telemetry,
        )
    selected = scenarios.selected
    result = gate_live(
        run,
        live_baseline,
        no_baseline=no_baseline,
        partial=None if selected is None else selected.describe(),
        allow_other_model=allow_other_model,
    )
    write_reports(result, report_dir, key=report_key())
    click.echo(render_live_terminal(result, str(report_dir)), nl=False)
    if record_dir is not None:
        from harness.cli._cassette_options import report_misses

        report_misses(result.checks)
        click.echo(f"cassette: {record_dir} (replay with --provider cassette:{record_dir})")
    return exit_code(result)


def _check_baseline_model(
    provider: str, model: str, live_baseline: Path | None, allow_other_model: bool
) -> None:
    settings = resolve_settings() if provider == "openai" else None
    wanted = settings.model if settings is not None else model
    path = live_baseline or live_baseline_path(wanted)
    if path.is_file():
        refuse_other_model(
            load_live_baseline(path), wanted, path, allow_other_model=allow_other_model
        )


def without_live_only(scenarios: CheckedSuite) -> CheckedSuite:
    """A replay run's suite: live-only scenarios (no script) cannot replay; say so in a line."""
    if not scenarios.live_only:
        return scenarios
    if len(scenarios.live_only) == len(scenarios):
        raise click.UsageError(
            f"every selected scenario ({len(scenarios)}) is live-only (it has no script), so a "
            "replay run has nothing to run; run them with --provider stub or --provider openai"
        )
    shown = ", ".join(scenarios.live_only[:5]) + (" ..." if len(scenarios.live_only) > 5 else "")
    click.echo(
        f"note: {len(scenarios.live_only)} live-only scenario(s) without a script left out of "
        f"this replay run ({shown}); run them with --provider openai or --provider stub",
        err=True,
    )
    kept = replayable(scenarios)
    assert isinstance(kept, CheckedSuite)
    return kept


def record_live(
    scenario_paths: Sequence[Path],
    *,
    provider: str,
    repeat: int,
    reason: str,
    live_baseline: Path | None,
    allow_regression: bool,
    stub_fault: str | None,
    allow_other_model: bool = False,
) -> int:
    """`proctor baseline record --live`: run the live suite K times and record its rates as
    the model's live baseline. Against the previous live baseline, a recording that drops a
    scenario or a check id, or lowers a rate (even within its interval: a baseline is lowered
    deliberately), is refused (exit 2) with the diff, unless --allow-regression; the file keeps
    every recording's reason in its history. Failing checks are recorded (a live baseline is a
    measurement, not a pass)."""
    from governance import SystemClock
    from harness import _exit_codes as codes
    from harness._live_baseline import build_live_baseline, write_live_baseline
    from harness._live_record import live_baseline_diff, live_history, live_record_refusals
    from harness._suite import load_checked_suite, new_run_id

    if provider not in ("openai", "stub"):
        raise click.UsageError("--live records a live provider's run: --provider openai or stub")
    model = stub_model(provider, stub_fault)
    if provider == "openai" and resolve_settings() is None:
        click.echo("SKIPPED: no live credential (set PROCTOR_LLM_API_KEY)")
        return codes.SKIPPED
    _check_baseline_model(provider, model, live_baseline, allow_other_model)
    scenarios = load_checked_suite(list(scenario_paths) or [default_live_scenarios()])
    with live_settings(provider, model) as settings:
        if settings is None:
            click.echo("SKIPPED: no live credential (set PROCTOR_LLM_API_KEY)")
            return codes.SKIPPED
        run = run_live(scenarios, settings, repeat=repeat, run_id=new_run_id(), report_dir=None)
    summary = run.result.live_run
    assert summary is not None
    path = live_baseline or live_baseline_path(summary.model)
    previous = load_live_baseline(path) if path.is_file() else None
    if previous is not None:
        refuse_other_model(previous, summary.model, path, allow_other_model=allow_other_model)
    refusals = live_record_refusals(run.scenarios, previous, str(path))
    stamp = SystemClock().now().strftime("%Y-%m-%dT%H:%M:%SZ")
    new = build_live_baseline(
        run.scenarios,
        model=summary.model,
        endpoint_host=summary.endpoint_host,
        repeat=repeat,
        reason=reason,
        recorded_at=stamp,
        history=live_history(
            previous,
            run.scenarios,
            model=summary.model,
            repeat=repeat,
            reason=reason,
            recorded_at=stamp,
            allow_regression=allow_regression,
            refusals=refusals,
        ),
    )
    diff = live_baseline_diff(previous, new)
    if refusals:
        lines = "\n".join(f"  {line}" for line in refusals)
        if not allow_regression:
            click.echo(f"refused: the new live baseline loses against {path}:", err=True)
            click.echo(lines, err=True)
            click.echo(diff, err=True)
            click.echo(
                "(re-run with --allow-regression to record it anyway; the reason is kept in "
                "the file's history)",
                err=True,
            )
            return codes.REGRESSED
        click.echo("WARNING: recording a LOWER live baseline (--allow-regression):", err=True)
        click.echo(lines, err=True)
    write_live_baseline(new, path)
    from harness.reports._live import counts

    click.echo(counts(summary))
    click.echo(diff)
    click.echo(
        f"recorded {path} (model {summary.model}, K={repeat}, {len(run.scenarios)} scenarios)"
    )
    return codes.OK
