"""`proctor score` and `proctor gate`: re-score stored traces without re-running anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from governance import ConfigError
from governance._config_text import decode_text, read_capped
from governance._json_lines import JsonDocument, load_json
from harness._scenario_load import load_scenarios
from harness._suite import assemble
from harness._trace import Trace
from harness.cli._app import cli
from harness.cli._eval_common import (
    acknowledgements,
    baseline_from_file,
    baseline_from_ref,
    finish,
)
from harness.cli._options import DEFAULT_BASELINE, DEFAULT_SCENARIOS, suite_options

REPORT_DIR = click.Path(exists=True, file_okay=False, path_type=Path)


def load_run(report_dir: Path) -> tuple[str, list[Trace]]:
    """The run id and traces a `proctor run` stored under `report_dir`."""
    report = report_dir / "report.json"
    if not report.is_file():
        raise click.BadParameter(f"{report} is missing: not a report directory", param_hint="RUN")
    data = _read_json(report, "report").data
    try:
        entries = [str(entry["trace"]) for entry in data.get("scenarios", [])]
    except (KeyError, TypeError, AttributeError) as exc:
        problem = f"{report} is not a Proctor report (no {exc} in its scenarios)"
        raise click.BadParameter(problem, param_hint="RUN") from None
    traces = []
    for entry in entries:
        path = (report_dir / entry).resolve()
        if not path.is_relative_to(report_dir.resolve()):
            raise click.BadParameter(f"{report} points outside the run: {entry}", param_hint="RUN")
        document = _read_json(path, "stored trace")
        try:
            traces.append(Trace.model_validate_json(document.text))
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            line, where = document.where(tuple(error["loc"]))
            problem = f"{path}:{line}: {where or 'the trace'}: {error['msg']}; re-run the suite"
            raise click.BadParameter(problem, param_hint="RUN") from None
    return str(data.get("run_id", report_dir.name)), traces


def _read_json(path: Path, subject: str) -> JsonDocument:
    """A JSON object Proctor wrote under a run directory; any problem is a usage error on RUN."""
    where = str(path)
    try:
        raw = read_capped(path, ConfigError, subject=subject)
        text = decode_text(raw, where, ConfigError, subject=subject, yaml_breaks=False)
        document = load_json(text, where, ConfigError, subject=subject)
    except OSError as exc:
        problem = f"cannot read {path} ({exc.strerror or exc})"
        raise click.BadParameter(problem, param_hint="RUN") from None
    except ConfigError as exc:
        raise click.BadParameter(f"{exc}; re-run the suite", param_hint="RUN") from None
    if not isinstance(document.data, dict):
        problem = f"{path}:1: the {subject} is not a JSON object; re-run the suite"
        raise click.BadParameter(problem, param_hint="RUN")
    return document


@cli.command("score")
@suite_options
@click.argument("run_dir", metavar="RUN", type=REPORT_DIR)
@click.option(
    "--baseline",
    "baseline_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also gate against this baseline.",
)
@click.option("--fail-on-drift", is_flag=True)
def score_command(
    scenario_paths: tuple[Path, ...],
    tags: tuple[str, ...],
    run_dir: Path,
    baseline_path: Path | None,
    fail_on_drift: bool,
) -> int:
    """Re-score the traces stored in RUN (a reports/<run> directory) against the scenarios."""
    run_id, traces = load_run(run_dir)
    scenarios = load_scenarios(list(scenario_paths) or [DEFAULT_SCENARIOS], tags=tags)
    traces = _selected(traces, scenarios, narrowed=bool(scenario_paths or tags))
    baseline = baseline_traces = None
    if baseline_path is not None:
        baseline, baseline_traces = baseline_from_file(baseline_path)
    result = assemble(run_id, scenarios, traces, baseline=baseline, baseline_traces=baseline_traces)
    return finish(result, None, fail_on_drift=fail_on_drift)


@cli.command("gate")
@suite_options
@click.argument("run_dir", metavar="RUN", type=REPORT_DIR)
@click.option(
    "--baseline",
    "baseline_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=DEFAULT_BASELINE,
    show_default=True,
)
@click.option(
    "--baseline-ref",
    default=None,
    help="Read the baseline from a git ref, so a pull request that rewrites the baseline "
    "is still gated against the target branch's (e.g. origin/main).",
)
@click.option("--fail-on-drift", is_flag=True)
def gate_command(
    scenario_paths: tuple[Path, ...],
    tags: tuple[str, ...],
    run_dir: Path,
    baseline_path: Path,
    baseline_ref: str | None,
    fail_on_drift: bool,
) -> int:
    """Gate the run stored in RUN against a baseline: exit 2 on any regression or changed
    scenario inputs."""
    run_id, traces = load_run(run_dir)
    scenarios = load_scenarios(list(scenario_paths) or [DEFAULT_SCENARIOS], tags=tags)
    traces = _selected(traces, scenarios, narrowed=bool(scenario_paths or tags))
    acknowledged: dict[tuple[str, str], str] = {}
    if baseline_ref is not None:
        baseline, baseline_traces = baseline_from_ref(baseline_ref, baseline_path)
        acknowledged = acknowledgements(baseline, baseline_path)
    else:
        baseline, baseline_traces = baseline_from_file(baseline_path)
    result = assemble(
        run_id,
        scenarios,
        traces,
        baseline=baseline,
        baseline_traces=baseline_traces,
        acknowledged=acknowledged,
    )
    return finish(result, None, fail_on_drift=fail_on_drift)


def _selected(traces: list[Trace], scenarios: list[Any], *, narrowed: bool) -> list[Trace]:
    """With --tag/--scenarios, score only the selected scenarios' traces."""
    if not narrowed:
        return traces
    wanted = {item.scenario.id for item in scenarios}
    return [t for t in traces if t.scenario_id in wanted]
