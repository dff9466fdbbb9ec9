"""Write every report of a suite run into one directory, the traces beside them for re-scoring."""

from __future__ import annotations

import hashlib
import itertools
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness._manifest import MANIFEST_NAME, manifest_chunks
from harness._results import SuiteResult
from harness._trace import Trace
from harness._trace_store import StoredTraces
from harness._trace_store import trace_filenames as trace_filenames
from harness.reports._html import html_chunks
from harness.reports._json import json_report_chunks
from harness.reports._junit import junit_chunks
from harness.reports._markdown import render_markdown
from harness.reports._side_process import side_process

TRACES_DIR = "traces"


def write_reports(
    result: SuiteResult, report_dir: Path, *, key: bytes | None = None, jobs: int = 1
) -> dict[str, Path]:
    """Write traces/, junit.xml, summary.md, report.html, report.json and manifest.json (last).

    Trace files are each trace's canonical bytes, so `proctor score` re-scores from disk; trace
    files of an earlier run in the same directory are removed so they cannot be re-scored as this
    run's. The manifest pins every trace and report.json by digest, signed with `key` when one
    is given. Returns the written paths keyed by file name (`traces` for the directory).
    `jobs > 1` (the processes the run's helper work may use, `harness._helper_cores`):
    report.html is written by a forked child meanwhile (`harness.reports._side_process`); the
    bytes are the same either way.
    """
    traces_dir = prepare_report_dir(report_dir)
    traces = result.traces
    if isinstance(traces, StoredTraces) and _same_dir(traces.directory, traces_dir):
        # Streamed here: the files are in place, their names and digests stay in the store.
        names: Mapping[str, str] = _StoredNames(traces)
    else:
        names = _copy_traces(traces, traces_dir)
    current = set(names.values())  # a set: a values view is searched end to end per file
    for stale in traces_dir.glob("*.json"):
        if stale.name not in current:
            stale.unlink()
    del current

    html = report_dir / "report.html"

    def write_html() -> None:
        _write_chunks(html, html_chunks(result))

    with side_process(write_html, "report.html", fork=jobs > 1):
        paths = {
            "junit.xml": _write_chunks(report_dir / "junit.xml", junit_chunks(result)),
            "summary.md": _write(report_dir / "summary.md", _encode(render_markdown(result))),
            "report.html": html,
        }
        relative = _Relative(names)
        report_digest = hashlib.sha256()
        paths["report.json"] = _write_chunks(
            report_dir / "report.json",
            itertools.chain(json_report_chunks(result, relative), ["\n"]),
            digest=report_digest,
        )
    digest_of = _digest_lookup(traces)
    entries = ((sid, relative[sid], digest_of(sid)) for sid in sorted(names))
    manifest = manifest_chunks(
        result.run_id, entries, report_digest="sha256:" + report_digest.hexdigest(), key=key
    )
    # manifest.json last: its presence says the directory is complete. Written entry by entry.
    paths[MANIFEST_NAME] = _write_chunks(
        report_dir / MANIFEST_NAME, itertools.chain(manifest, ["\n"])
    )
    paths["traces"] = traces_dir
    return paths


def _copy_traces(traces: Sequence[Trace], traces_dir: Path) -> dict[str, str]:
    """Write each trace's file into `traces_dir`; returns scenario id -> file name."""
    if isinstance(traces, StoredTraces):
        names = trace_filenames(list(traces.ids))
        for sid, name in names.items():  # streamed elsewhere: copied a file at a time
            _write(traces_dir / name, traces.path_of(sid).read_bytes())
        return names
    names = trace_filenames([t.scenario_id for t in traces])
    for trace in traces:
        _write(traces_dir / names[trace.scenario_id], trace.canonical())
    return names


def _digest_lookup(traces: Sequence[Trace]) -> Callable[[str], str]:
    """scenario id -> its trace digest: kept by the store for a streamed run."""
    if isinstance(traces, StoredTraces):

        def stored(scenario_id: str) -> str:
            facts = traces.facts(scenario_id)
            if facts is None:
                raise KeyError(scenario_id)
            return facts.digest

        return stored
    return {t.scenario_id: t.digest for t in traces}.__getitem__


class _StoredNames(Mapping[str, str]):
    """scenario id -> trace file name, as the store names them: nothing held per scenario."""

    def __init__(self, traces: StoredTraces) -> None:
        self._traces = traces

    def __getitem__(self, scenario_id: str) -> str:
        if self._traces.position(scenario_id) is None:
            raise KeyError(scenario_id)
        return self._traces.path_of(scenario_id).name

    def __iter__(self) -> Iterator[str]:
        return iter(self._traces.ids)

    def __len__(self) -> int:
        return len(self._traces)


class _Relative(Mapping[str, str]):
    """scenario id -> its trace file relative to the report directory (`traces/<name>`)."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self._names = names

    def __getitem__(self, scenario_id: str) -> str:
        return f"{TRACES_DIR}/{self._names[scenario_id]}"

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def prepare_report_dir(report_dir: Path) -> Path:
    """Make `report_dir/traces` and remove an earlier run's manifest (it must not vouch for
    this run's files while they are written); returns the traces directory. A run that streams
    its traces calls this before the first one is written."""
    traces_dir = report_dir / TRACES_DIR
    traces_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / MANIFEST_NAME).unlink(missing_ok=True)
    return traces_dir


def _same_dir(one: Path, other: Path) -> bool:
    return one.resolve() == other.resolve()


def _encode(text: str) -> bytes:
    # A lone surrogate cannot be UTF-8; write it as a visible \udXXX rather than fail the run.
    return text.encode("utf-8", errors="backslashreplace")


def _write_chunks(path: Path, chunks: Iterable[str], *, digest: Any = None) -> Path:
    """`_write` for text produced in pieces: each piece is encoded and written, then let go
    (and fed to `digest`, a hashlib object, when given)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    try:
        with os.fdopen(fd, "wb", buffering=1 << 16) as handle:
            for chunk in chunks:
                data = _encode(chunk)
                handle.write(data)
                if digest is not None:
                    digest.update(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


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
