"""The eval runs under the console's reports directory, as `proctor run` wrote them
(harness.reports: report.json, report.html, summary.md, junit.xml, manifest.json last).

Nothing in a run directory is trusted: report.json is read with the config readers' caps and
checked field by field, so a damaged or half-written directory becomes a `problem` to show,
never an exception. Files are served only by a fixed set of names, from a directory directly
inside the reports directory, with no symbolic link on the way (`open_run_file`).
"""

from __future__ import annotations

import datetime as dt
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from governance import ConfigError
from governance.config import decode_text, load_json
from harness._manifest import MANIFEST_NAME
from harness._trace import DETERMINISTIC_NOTICE
from harness.reports import REPORT_VERSION

REPORT_JSON = "report.json"
REPORT_HTML = "report.html"
# The only files served out of a run directory, and as what. junit.xml goes out as text: a
# browser never interprets it (no XSLT, no entities).
SERVED_FILES: Mapping[str, str] = {
    REPORT_HTML: "text/html; charset=utf-8",
    REPORT_JSON: "application/json",
    MANIFEST_NAME: "application/json",
    "summary.md": "text/plain; charset=utf-8",
    "junit.xml": "text/plain; charset=utf-8",
}
# What marks a directory as a run's (anything else under reports/, e.g. screenshots, is not).
_RUN_MARKERS = (REPORT_JSON, MANIFEST_NAME, REPORT_HTML, "traces")
RUNS_SHOWN = 200
T = TypeVar("T")
MAX_SERVED_BYTES = 256 << 20


class RunFileRefused(LookupError):
    """A run or file name the console will not serve (unknown, outside, a link, not there)."""


@dataclass(frozen=True, slots=True)
class MetricView:
    name: str
    passed: int
    total: int
    rate: float | None
    baseline_rate: float | None
    delta: float | None


@dataclass(frozen=True, slots=True)
class RegressionView:
    kind: str
    detail: str
    metric: str | None
    scenario_id: str | None


@dataclass(frozen=True, slots=True)
class ScenarioView:
    id: str
    file: str
    status: str
    termination: str
    checks_passed: int
    checks_failed: int
    tool_calls: str
    tags: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FailureView:
    scenario_id: str
    id: str
    why: str


@dataclass(frozen=True, slots=True)
class EvalReport:
    """report.json, checked: every value the pages show has the type they expect."""

    run_id: str
    live: bool
    notice: str | None
    providers: str
    exit_code: int
    exit_meaning: str
    baselined: bool
    checks_total: int
    checks_failed: int
    metrics: list[MetricView]
    regressions: list[RegressionView]
    failures: list[FailureView]
    scenarios: list[ScenarioView]
    drift: int
    input_changes: int
    selection_note: str | None
    live_statement: str | None
    not_gated_because: str | None


@dataclass(frozen=True, slots=True)
class EvalRun:
    name: str  # the directory's name under the reports directory
    written: str  # when report.json (else the directory) was last written, UTC
    report: EvalReport | None
    problems: list[str] = field(default_factory=list)  # why it is damaged; empty when sound
    has_html: bool = False

    @property
    def damaged(self) -> bool:
        return bool(self.problems)

    @property
    def provider_kind(self) -> str:
        if self.report is None:
            return "unknown"
        return "live" if self.report.live else "replay"


@dataclass(frozen=True, slots=True)
class EvalListing:
    runs: list[EvalRun]
    total: int
    missing_dir: bool
    error: str | None = None  # why the reports directory cannot be listed


class _Damaged(ValueError):
    pass


def list_runs(reports_dir: Path) -> EvalListing:
    """Every run directory directly under `reports_dir`, newest first."""
    try:
        children = list(os.scandir(reports_dir))
    except FileNotFoundError:
        return EvalListing([], 0, missing_dir=True)
    except OSError as exc:
        return EvalListing([], 0, missing_dir=False, error=exc.strerror or str(exc))
    runs = []
    for child in children:
        if child.name.startswith(".") or not _looks_like_run(child):
            continue
        runs.append(load_run(reports_dir, child.name))
    runs.sort(key=lambda r: (r.written, r.name), reverse=True)
    return EvalListing(runs[:RUNS_SHOWN], len(runs), missing_dir=False)


def _looks_like_run(child: os.DirEntry[str]) -> bool:
    if child.is_symlink():
        return True  # listed, so the page can say why it is not served
    if not child.is_dir(follow_symlinks=False):
        return False
    return any(os.path.lexists(os.path.join(child.path, m)) for m in _RUN_MARKERS)


def run_dir(reports_dir: Path, name: str) -> Path:
    """The directory `name` directly inside `reports_dir`; RunFileRefused for a name that is
    not one plain path component, a symbolic link, or anything not a directory."""
    if (
        not name
        or name in (".", "..")
        or name.startswith(".")
        or any(c in name for c in "/\\\0")
        or os.path.isabs(name)
        or len(name) > 255
    ):
        raise RunFileRefused(f"{name!r} is not a run directory's name")
    path = reports_dir / name
    try:
        info = path.lstat()
    except OSError:
        raise RunFileRefused(f"no run {name!r} under the reports directory") from None
    if stat.S_ISLNK(info.st_mode):
        raise RunFileRefused(f"{name!r} is a symbolic link: only directories are served")
    if not stat.S_ISDIR(info.st_mode):
        raise RunFileRefused(f"{name!r} is not a directory")
    if path.resolve().parent != reports_dir.resolve():
        raise RunFileRefused(f"{name!r} is not inside the reports directory")
    return path


def open_run_file(reports_dir: Path, name: str, filename: str) -> tuple[bytes, str]:
    """(bytes, media type) of one of SERVED_FILES in run `name`; RunFileRefused otherwise."""
    media = SERVED_FILES.get(filename)
    if media is None:
        raise RunFileRefused(f"{filename!r} is not a file the console serves")
    directory = run_dir(reports_dir, name)
    try:
        data = _read_regular(directory / filename)
    except OSError:
        raise RunFileRefused(f"run {name!r} has no {filename} (or it is a link)") from None
    except ValueError as exc:
        raise RunFileRefused(f"{filename} in run {name!r} {exc}") from None
    return data, media


def _read_regular(path: Path) -> bytes:
    """A regular file's bytes, opened with O_NOFOLLOW (a link, even one swapped in after any
    check, is an OSError) and capped (ValueError past MAX_SERVED_BYTES or not a file)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise ValueError("is not a regular file")
        data = handle.read(MAX_SERVED_BYTES + 1)
    if len(data) > MAX_SERVED_BYTES:
        raise ValueError("is too large to serve")
    return data


def load_run(reports_dir: Path, name: str) -> EvalRun:
    """The run `name`, damaged (with every reason found) rather than raising."""
    try:
        directory = run_dir(reports_dir, name)
    except RunFileRefused as exc:
        return EvalRun(name, "", None, [str(exc)])
    problems: list[str] = []
    report_path = directory / REPORT_JSON
    report: EvalReport | None = None
    try:
        raw = _read_regular(report_path)
        text = decode_text(raw, str(report_path), ConfigError, subject="report", yaml_breaks=False)
        report = _checked(load_json(text, str(report_path), ConfigError, subject="report").data)
    except FileNotFoundError:
        problems.append(f"{REPORT_JSON} is missing: the run was interrupted or is being written")
    except OSError as exc:  # ELOOP: a symbolic link, never followed
        problems.append(f"{REPORT_JSON} cannot be read ({exc.strerror or exc}; links are not read)")
    except ValueError as exc:
        problems.append(f"{REPORT_JSON} {exc}")
    except ConfigError as exc:
        problems.append(f"{REPORT_JSON} is not a report: {exc.message}")
    except _Damaged as exc:
        problems.append(f"{REPORT_JSON} is not a report this Proctor wrote: {exc}")
    if not (directory / MANIFEST_NAME).is_file():
        problems.append(
            f"{MANIFEST_NAME} is missing: it is written last, so the run did not finish "
            "writing its reports"
        )
    html = directory / REPORT_HTML
    has_html = html.is_file() and not html.is_symlink()
    return EvalRun(name, _written(report_path, directory), report, problems, has_html)


def _written(report_path: Path, directory: Path) -> str:
    for path in (report_path, directory):
        try:
            mtime = path.lstat().st_mtime
        except OSError:
            continue
        return dt.datetime.fromtimestamp(mtime, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return ""


# -- report.json, checked ----------------------------------------------------------------------


def _checked(data: Any) -> EvalReport:
    report = _obj(data, "the report")
    version = report.get("version")
    if version != REPORT_VERSION:
        raise _Damaged(f"version {version!r}, this console reads version {REPORT_VERSION}")
    live = _typed(report, "live", bool)
    checks = _obj(report.get("checks"), "checks")
    selection = report.get("selection")
    live_run = report.get("live_run")
    notice = _opt_str(report, "notice")
    if not live and notice is None:  # every replay report says so; say it even if this lost it
        notice = DETERMINISTIC_NOTICE
    return EvalReport(
        run_id=_typed(report, "run_id", str),
        live=live,
        notice=notice,
        providers=", ".join(_provider(p) for p in _list(report, "providers")) or "none",
        exit_code=_typed(report, "exit_code", int),
        exit_meaning=_typed(report, "exit_meaning", str),
        baselined=_typed(report, "baselined", bool),
        checks_total=_typed(checks, "total", int),
        checks_failed=_typed(checks, "failed", int),
        metrics=[_metric(m) for m in _list(report, "metrics")],
        regressions=[_regression(r) for r in _list(report, "regressions")],
        failures=[_failure(f) for f in _list(report, "failures")],
        scenarios=[_scenario(s) for s in _list(report, "scenarios")],
        drift=len(_list(report, "drift")),
        input_changes=len(_list(report, "input_changes")),
        selection_note=(
            _opt_str(_obj(selection, "selection"), "note") if selection is not None else None
        ),
        live_statement=(
            _opt_str(_obj(live_run, "live_run"), "statement") if live_run is not None else None
        ),
        not_gated_because=(
            _opt_str(_obj(live_run, "live_run"), "not_gated_because")
            if live_run is not None
            else None
        ),
    )


def _obj(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Damaged(f"{what} is not a JSON object")
    return value


def _list(obj: Mapping[str, Any], key: str) -> list[Any]:
    value = obj.get(key)
    if not isinstance(value, list):
        raise _Damaged(f"{key!r} is not a list")
    return value


def _typed(obj: Mapping[str, Any], key: str, kind: type[T]) -> T:
    value = obj.get(key)
    # bool is an int: an int field must not accept true/false, nor a bool field 0/1.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _Damaged(f"{key!r} is not a {kind.__name__}")
    return value


def _opt_str(obj: Mapping[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise _Damaged(f"{key!r} is not text")
    return value


def _rate(obj: Mapping[str, Any], key: str) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Damaged(f"{key!r} is not a number")
    return float(value)


def _provider(value: Any) -> str:
    p = _obj(value, "a provider")
    return f"{_typed(p, 'name', str)} ({_opt_str(p, 'model') or '?'})"


def _metric(value: Any) -> MetricView:
    m = _obj(value, "a metric")
    baseline = m.get("baseline")
    return MetricView(
        name=_typed(m, "name", str),
        passed=_typed(m, "passed", int),
        total=_typed(m, "total", int),
        rate=_rate(m, "rate"),
        baseline_rate=_rate(_obj(baseline, "a baseline"), "rate") if baseline is not None else None,
        delta=_rate(m, "delta"),
    )


def _regression(value: Any) -> RegressionView:
    r = _obj(value, "a regression")
    return RegressionView(
        kind=_typed(r, "kind", str),
        detail=_typed(r, "detail", str),
        metric=_opt_str(r, "metric"),
        scenario_id=_opt_str(r, "scenario_id"),
    )


def _failure(value: Any) -> FailureView:
    f = _obj(value, "a failure")
    return FailureView(_typed(f, "scenario_id", str), _typed(f, "id", str), _typed(f, "why", str))


def _scenario(value: Any) -> ScenarioView:
    s = _obj(value, "a scenario")
    calls = _obj(s.get("tool_calls", {}), "tool_calls")
    tags = _list(s, "tags") if "tags" in s else []
    return ScenarioView(
        id=_typed(s, "id", str),
        file=_opt_str(s, "file") or "",
        status=_opt_str(s, "status") or "",
        termination=_opt_str(s, "termination") or "",
        checks_passed=_typed(s, "checks_passed", int),
        checks_failed=_typed(s, "checks_failed", int),
        tool_calls=", ".join(f"{k} {v}" for k, v in sorted(calls.items())),
        tags=tuple(str(t) for t in tags),
    )


@dataclass(frozen=True, slots=True)
class TraceCheck:
    """`proctor score`'s check of a run's stored evidence: manifest, report.json and traces."""

    ok: bool
    lines: list[str]


def check_traces(reports_dir: Path, name: str) -> TraceCheck:
    """What `proctor score RUN` would say of the run's files before believing them (its own
    reader and verifier); RunFileRefused for a name that is not a run directory."""
    import click

    from harness._run_verify import StoredRunInvalid, verify_run
    from harness.cli._eval_common import report_key
    from harness.cli._score import read_run

    directory = run_dir(reports_dir, name)
    linked = [f for f in (REPORT_JSON, MANIFEST_NAME) if (directory / f).is_symlink()]
    if linked:
        return TraceCheck(False, [f"{f} is a symbolic link: not read" for f in linked])
    try:
        files = read_run(directory)
        verdict = verify_run(
            name,
            report_bytes=files.report_bytes,
            report=files.report,
            manifest_text=files.manifest_text,
            traces=files.traces,
            key=report_key(),
        )
    except click.ClickException as exc:
        return TraceCheck(False, [exc.format_message()])
    except (StoredRunInvalid, ConfigError) as exc:
        return TraceCheck(False, str(exc).splitlines())
    return TraceCheck(True, [verdict.note])
