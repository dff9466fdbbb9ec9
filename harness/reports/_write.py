"""Write every report of a suite run into one directory, the traces beside them for re-scoring."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections import Counter
from pathlib import Path

from harness._errors import HarnessError
from harness._manifest import MANIFEST_NAME, ManifestTrace, build_manifest
from harness._results import SuiteResult
from harness.reports._html import render_html
from harness.reports._json import render_json
from harness.reports._junit import render_junit
from harness.reports._markdown import render_markdown

TRACES_DIR = "traces"
_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}")


def trace_filenames(scenario_ids: list[str]) -> dict[str, str]:
    """Scenario id -> `<id>.json`; an id unsafe as a file name (or equal to another but for case,
    which collides on macOS/Windows) gets a sanitised name plus a short digest of the id."""
    if len(set(scenario_ids)) != len(scenario_ids):
        dupes = sorted(k for k, n in Counter(scenario_ids).items() if n > 1)
        raise HarnessError(f"two traces share a scenario id: {', '.join(dupes)}")
    folded = Counter(sid.casefold() for sid in scenario_ids)
    names = {}
    for sid in scenario_ids:
        if _SAFE.fullmatch(sid) and folded[sid.casefold()] == 1:
            names[sid] = f"{sid}.json"
        else:
            stem = re.sub(r"[^A-Za-z0-9._-]", "_", sid).lstrip("._-")[:80] or "scenario"
            names[sid] = f"{stem}-{hashlib.sha256(sid.encode()).hexdigest()[:10]}.json"
    return names


def write_reports(
    result: SuiteResult, report_dir: Path, *, key: bytes | None = None
) -> dict[str, Path]:
    """Write traces/, junit.xml, summary.md, report.html, report.json and manifest.json (last).

    Trace files are each trace's canonical bytes, so `proctor score` re-scores from disk; trace
    files of an earlier run in the same directory are removed so they cannot be re-scored as this
    run's. The manifest pins every trace and report.json by digest, signed with `key` when one
    is given. Returns the written paths keyed by file name (`traces` for the directory).
    """
    traces_dir = report_dir / TRACES_DIR
    traces_dir.mkdir(parents=True, exist_ok=True)
    # An earlier run's manifest must not vouch for this run's files while they are written.
    (report_dir / MANIFEST_NAME).unlink(missing_ok=True)
    names = trace_filenames([t.scenario_id for t in result.traces])
    for trace in result.traces:
        _write(traces_dir / names[trace.scenario_id], trace.canonical())
    for stale in traces_dir.glob("*.json"):
        if stale.name not in names.values():
            stale.unlink()

    paths = {
        "junit.xml": _write(report_dir / "junit.xml", render_junit(result)),
        "summary.md": _write(report_dir / "summary.md", _encode(render_markdown(result))),
        "report.html": _write(report_dir / "report.html", _encode(render_html(result))),
    }
    relative = {sid: f"{TRACES_DIR}/{name}" for sid, name in names.items()}
    report = _encode(render_json(result, relative) + "\n")
    paths["report.json"] = _write(report_dir / "report.json", report)
    pinned = {
        t.scenario_id: ManifestTrace(file=relative[t.scenario_id], digest=t.digest)
        for t in sorted(result.traces, key=lambda t: t.scenario_id)
    }
    manifest = build_manifest(result.run_id, pinned, report, key=key)
    # manifest.json last: its presence says the directory is complete.
    paths[MANIFEST_NAME] = _write(
        report_dir / MANIFEST_NAME, _encode(manifest.model_dump_json(indent=2) + "\n")
    )
    paths["traces"] = traces_dir
    return paths


def _encode(text: str) -> bytes:
    # A lone surrogate cannot be UTF-8; write it as a visible \udXXX rather than fail the run.
    return text.encode("utf-8", errors="backslashreplace")


def _write(path: Path, data: bytes) -> Path:
    """Temp file + rename: a reader never sees half a report."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; reports are for sharing
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
