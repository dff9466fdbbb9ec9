"""What `run`, `score`, `gate` and `baseline record` share: baselines from files or git refs,
printing and writing a scored suite, and the exit code."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path
from typing import Any

import click

from governance.config import decode_text
from harness._baseline import (
    Baseline,
    acknowledged_changes,
    load_baseline,
    load_baseline_text,
    load_baseline_traces,
    load_trace_json,
)
from harness._errors import BaselineError
from harness._manifest import REPORT_KEY_ENV
from harness._results import SuiteResult
from harness._run_verify import check_baseline_traces
from harness._suite import exit_code
from harness.reports import exit_meaning, render_terminal, write_reports


def report_key() -> bytes | None:
    """The key runs are signed and verified with (a CI secret); None when it is not set."""
    return os.environ.get(REPORT_KEY_ENV, "").encode("utf-8") or None


def baseline_from_file(path: Path) -> tuple[Baseline, dict[str, dict[str, Any]]]:
    """The baseline and its stored traces, the traces verified against the baseline's digests."""
    if not path.is_file():
        raise click.BadParameter(f"no baseline at {path}", param_hint="--baseline")
    baseline = load_baseline(path)
    directory = path.parent / "traces"
    traces = load_baseline_traces(directory)
    origins = {sid: str(directory / f"{sid}.json") for sid in traces}
    check_baseline_traces(str(directory), baseline, traces, origins)
    return baseline, traces


def baseline_from_ref(ref: str, path: Path) -> tuple[Baseline, dict[str, dict[str, Any]]]:
    """The baseline as committed on `ref` (e.g. origin/main): a PR cannot gate itself.

    git runs in the baseline's directory and reads `REF:./<name>`, so `path` means what it means
    for every other option (relative to the current directory, or absolute) and works from a
    subdirectory; without that directory in the work tree, `path` is taken from the repo root.
    """
    where = path.parent if path.parent.is_dir() else None
    base = "./" if where is not None else f"{path.parent.as_posix()}/"
    shown = f"{ref}:{path.as_posix()}"
    raw = _git(where, "show", f"{ref}:{base}{path.name}")
    if raw is None:
        raise click.BadParameter(f"{shown} does not exist", param_hint="--baseline-ref")
    text = decode_text(raw, shown, BaselineError, subject="baseline file", yaml_breaks=False)
    baseline = load_baseline_text(text, shown)
    traces: dict[str, dict[str, Any]] = {}
    origins: dict[str, str] = {}
    # --full-tree: run from a subdirectory, ls-tree would otherwise filter the listing by that
    # directory's path and list nothing.
    listing = _git(where, "ls-tree", "--full-tree", "--name-only", "-z", f"{ref}:{base}traces")
    for name in (listing or b"").decode("utf-8", "surrogateescape").split("\0"):
        if name.endswith(".json"):
            stored = _git(where, "show", f"{ref}:{base}traces/{name}")
            if stored is not None:
                origin = f"{ref}:{base}traces/{name}"
                text = decode_text(
                    stored, origin, BaselineError, subject="stored trace", yaml_breaks=False
                )
                traces[name[: -len(".json")]] = load_trace_json(text, origin).data
                origins[name[: -len(".json")]] = origin
    check_baseline_traces(f"{ref}:{base}traces", baseline, traces, origins)
    return baseline, traces


def acknowledgements(base: Baseline, head_path: Path) -> dict[tuple[str, str], str]:
    """Input changes the work tree's baseline (a pull request's) acknowledged since `base`.

    With `--baseline-ref`, a scenario whose inputs differ from the target branch's baseline
    passes only when the pull request re-recorded its baseline acknowledging exactly these
    inputs (`proctor baseline record --accept-changed ID`); editing a scenario alone does not.
    """
    if not head_path.is_file():
        return {}
    found = acknowledged_changes(base, load_baseline(head_path))
    if found is None:
        click.echo(
            f"note: the history of {head_path} does not extend the base branch's baseline, so "
            "its acknowledgements of changed inputs do not count; rebase and record again",
            err=True,
        )
        return {}
    return found


def _git(cwd: Path | None, *args: str) -> bytes | None:
    """git's output as bytes: what a ref holds is decoded (and checked) by the loaders."""
    done = subprocess.run(["git", *args], capture_output=True, check=False, timeout=60, cwd=cwd)
    return done.stdout if done.returncode == 0 else None


def finish(
    result: SuiteResult, report_dir: Path | None, *, fail_on_drift: bool, jobs: int = 1
) -> int:
    """Print the terminal report, write the artifacts, return the exit code. `jobs`: the
    processes the reports may be written by (`harness._helper_cores`; more than one: two)."""
    # The reports state the exit code too: they must count drift exactly as the exit code does.
    result = dataclasses.replace(result, fail_on_drift=fail_on_drift)
    click.echo(render_terminal(result))
    if result.gate is None:
        click.echo("NOT GATED: no baseline was compared; regressions cannot be detected.")
    if report_dir is not None:
        key = report_key()
        written = write_reports(result, report_dir, key=key, jobs=jobs)
        click.echo(f"reports: {written['report.html'].parent}")
        if key:
            click.echo(f"manifest: signed (HMAC-SHA256 with {REPORT_KEY_ENV})")
        else:
            click.echo(f"manifest: unsigned ({REPORT_KEY_ENV} is not set): unauthenticated")
    code = exit_code(result, fail_on_drift=fail_on_drift)
    click.echo(f"exit {code}: {exit_meaning(result)}")
    return code
