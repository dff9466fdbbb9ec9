"""`proctor score` and `proctor gate`: re-score stored traces without re-running anything."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
from pydantic import ValidationError

from governance import ConfigError
from governance.config import JsonDocument, decode_text, load_json, read_capped
from harness._manifest import MANIFEST_NAME
from harness._run_verify import StoredRunInvalid, StoredTrace, verify_run
from harness._scenario_load import load_selected
from harness._suite import assemble
from harness._trace import Trace
from harness.cli._eval_common import (
    acknowledgements,
    baseline_from_file,
    baseline_from_ref,
    finish,
    report_key,
)
from harness.cli._options import DEFAULT_BASELINE, DEFAULT_SCENARIOS, suite_options

if TYPE_CHECKING:
    from harness._select import Selection

REPORT_DIR = click.Path(exists=True, file_okay=False, path_type=Path)


@dataclass(frozen=True, slots=True)
class RunFiles:
    """A run directory as read, before anything in it is believed."""

    run_id: str
    report_bytes: bytes
    report: dict[str, Any]
    manifest_text: str | None
    traces: list[StoredTrace]


def read_run(report_dir: Path) -> RunFiles:
    """What a `proctor run` stored under `report_dir`: report, manifest and traces, parsed.

    A directory that is not a run is a usage error (64); a trace file that is not a trace is
    invalid evidence (StoredRunInvalid, exit 3).
    """
    report = report_dir / "report.json"
    if not report.is_file():
        raise click.BadParameter(f"{report} is missing: not a report directory", param_hint="RUN")
    raw, document = _read_json(report, "report")
    data = document.data
    live = data.get("live_run") if isinstance(data, dict) else None
    if isinstance(live, dict):  # its traces are in its runs' directories, not at the top
        runs = [str(r) for r in live.get("runs", [])] or ["r1"]
        raise click.BadParameter(
            f"{report_dir} is a live run with {len(runs)} repeat(s): its traces are in "
            f"{report_dir / runs[0]}/ .. {report_dir / runs[-1]}/; point at one of those "
            "(each is a complete run)",
            param_hint="RUN",
        )
    try:
        entries = [dict(entry) for entry in data.get("scenarios", [])]
        files = [str(entry["trace"]) for entry in entries]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        problem = f"{report} is not a Proctor report (no {exc} in its scenarios)"
        raise click.BadParameter(problem, param_hint="RUN") from None
    traces = []
    for entry, name in zip(entries, files, strict=True):
        path = (report_dir / name).resolve()
        if not path.is_relative_to(report_dir.resolve()):
            raise click.BadParameter(f"{report} points outside the run: {name}", param_hint="RUN")
        _, stored = _read_json(path, "stored trace", invalid=StoredRunInvalid)
        try:
            trace = Trace.model_validate_json(stored.text)
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            line, where = stored.where(tuple(error["loc"]))
            problem = f"{where or 'the trace'}: {error['msg']}; not a trace this run wrote"
            raise StoredRunInvalid(path, line, problem) from None
        traces.append(StoredTrace(entry=entry, file=name, trace=trace))
    manifest = report_dir / MANIFEST_NAME
    manifest_text = None
    if manifest.is_file():
        manifest_text = _read_json(manifest, "run manifest", invalid=StoredRunInvalid)[1].text
    return RunFiles(
        run_id=str(data.get("run_id", report_dir.name)),
        report_bytes=raw,
        report=data,
        manifest_text=manifest_text,
        traces=traces,
    )


def load_run(report_dir: Path) -> tuple[str, list[Trace]]:
    """The run id and traces stored under `report_dir`, verified first (exit 3 if they fail)."""
    files = read_run(report_dir)
    verification = verify_run(
        str(report_dir),
        report_bytes=files.report_bytes,
        report=files.report,
        manifest_text=files.manifest_text,
        traces=files.traces,
        key=report_key(),
    )
    click.echo(verification.note, err=True)
    click.echo(verification.note)
    partial = files.report.get("selection")
    if isinstance(partial, dict):  # gated whole, its unselected scenarios would all be "lost"
        shown = " ".join(str(flag) for flag in partial.get("selectors", []))
        click.echo(
            f"note: {report_dir} is a partial run ({shown}); give the same selectors to score "
            "or gate only what it selected",
            err=True,
        )
    return files.run_id, [stored.trace for stored in files.traces]


def _read_json(
    path: Path, subject: str, *, invalid: type[StoredRunInvalid] | None = None
) -> tuple[bytes, JsonDocument]:
    """A JSON object Proctor wrote under a run directory, with its bytes.

    Any problem is a usage error on RUN, or `invalid` (exit 3) for a file inside a run whose
    contents must be evidence (a trace, the manifest).
    """
    where = str(path)

    def refuse(line: int | None, problem: str) -> NoReturn:
        if invalid is not None:
            raise invalid(path, line, problem)
        shown = f"{where}:{line}: {problem}" if line is not None else problem
        raise click.BadParameter(shown, param_hint="RUN")

    try:
        raw = read_capped(path, ConfigError, subject=subject)
        text = decode_text(raw, where, ConfigError, subject=subject, yaml_breaks=False)
        document = load_json(text, where, ConfigError, subject=subject)
    except OSError as exc:
        refuse(None, f"cannot read {path} ({exc.strerror or exc})")
    except ConfigError as exc:
        if invalid is not None:
            raise invalid(exc.path, exc.line, f"{exc.message}; not a file this run wrote") from None
        raise click.BadParameter(f"{exc}; re-run the suite", param_hint="RUN") from None
    if not isinstance(document.data, dict):
        refuse(1, f"the {subject} is not a JSON object; re-run the suite")
    return raw, document


@click.command("score")
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
    selection: Selection,
    run_dir: Path,
    baseline_path: Path | None,
    fail_on_drift: bool,
) -> int:
    """Re-score the traces stored in RUN (a reports/<run> directory) against the scenarios.

    The traces are verified first (manifest digests, consistency, the HMAC signature when
    PROCTOR_REPORT_KEY is set): a run that does not verify exits 3 and is not scored.
    """
    run_id, traces = load_run(run_dir)
    scenarios, selected = load_selected(list(scenario_paths) or [DEFAULT_SCENARIOS], selection)
    traces = _selected(traces, scenarios, narrowed=bool(scenario_paths or selection.active))
    baseline = baseline_traces = None
    if baseline_path is not None:
        baseline, baseline_traces = baseline_from_file(baseline_path)
    result = assemble(
        run_id,
        scenarios,
        traces,
        baseline=baseline,
        baseline_traces=baseline_traces,
        selected=selected,
    )
    return finish(result, None, fail_on_drift=fail_on_drift)


@click.command("gate")
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
    selection: Selection,
    run_dir: Path,
    baseline_path: Path,
    baseline_ref: str | None,
    fail_on_drift: bool,
) -> int:
    """Gate the run stored in RUN against a baseline: exit 2 on any regression or changed
    scenario inputs.

    RUN and the baseline's stored traces are verified first; exit 3 when they do not verify.
    """
    run_id, traces = load_run(run_dir)
    scenarios, selected = load_selected(list(scenario_paths) or [DEFAULT_SCENARIOS], selection)
    traces = _selected(traces, scenarios, narrowed=bool(scenario_paths or selection.active))
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
        selected=selected,
    )
    return finish(result, None, fail_on_drift=fail_on_drift)


def _selected(traces: list[Trace], scenarios: list[Any], *, narrowed: bool) -> list[Trace]:
    """With --tag/--scenarios, score only the selected scenarios' traces."""
    if not narrowed:
        return traces
    wanted = {item.scenario.id for item in scenarios}
    return [t for t in traces if t.scenario_id in wanted]
