"""Verify stored traces before they are scored or gated: a run's, and the baseline's.

A run directory is believed only when its manifest, its report and its traces agree: every
trace's digest is the one the run recorded, its run id is the run's, it is internally
consistent (`harness._trace_verify`), and, when `PROCTOR_REPORT_KEY` is configured, the
manifest's HMAC verifies. The baseline's committed traces are held to the digests in the
baseline file and to the same consistency rules; the baseline is authenticated by review of the
commit that changed it, not by the key.

Pure: callers read the files and hand over their contents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from governance import ConfigError, digest
from harness._baseline import Baseline
from harness._manifest import (
    MANIFEST_NAME,
    REPORT_KEY_ENV,
    RunManifest,
    bytes_digest,
    signature_problem,
)
from harness._trace import Trace
from harness._trace_verify import trace_problems

REPORT_NAME = "report.json"
_MAX_SHOWN = 20
BASELINE_RUN_ID = "baseline"
"""Stored baseline traces carry no run id (it is not part of the digest); checked under this."""


class StoredRunInvalid(ConfigError):
    """Stored traces do not verify: changed after they were written, or not one run's. Exit 3."""


@dataclass(frozen=True, slots=True)
class StoredTrace:
    """One trace file of a run directory as read: the report entry that named it, and the trace."""

    entry: Mapping[str, Any]
    file: str
    trace: Trace


@dataclass(frozen=True, slots=True)
class RunVerification:
    authenticated: bool
    note: str


def verify_run(
    run_dir: str,
    *,
    report_bytes: bytes,
    report: Mapping[str, Any],
    manifest_text: str | None,
    traces: Sequence[StoredTrace],
    key: bytes | None,
) -> RunVerification:
    """Check the run; raise StoredRunInvalid listing every problem (file: what does not match)."""
    problems = run_problems(
        report_bytes=report_bytes,
        report=report,
        manifest_text=manifest_text,
        traces=traces,
        key=key,
    )
    if problems:
        raise StoredRunInvalid(run_dir, None, _listing("the stored run does not verify", problems))
    if key:
        return RunVerification(
            True, f"authenticated: the run's manifest signature verifies with {REPORT_KEY_ENV}"
        )
    return RunVerification(
        False,
        f"unauthenticated: {REPORT_KEY_ENV} is not set, so the run's signature was not checked "
        "(its traces do match its manifest and are consistent)",
    )


def run_problems(
    *,
    report_bytes: bytes,
    report: Mapping[str, Any],
    manifest_text: str | None,
    traces: Sequence[StoredTrace],
    key: bytes | None,
) -> list[str]:
    """Every way the manifest, report.json and the traces disagree, each as `FILE: problem`."""
    problems: list[str] = []
    run_id = str(report.get("run_id"))
    manifest = _parse_manifest(manifest_text, problems)
    pinned: Mapping[str, Any] = {}
    if manifest is not None:
        trouble = signature_problem(manifest, key)
        if trouble is not None:
            problems.append(f"{MANIFEST_NAME}: {trouble}")
        if manifest.run_id != run_id:
            problems.append(
                f"{REPORT_NAME}: run id {run_id!r} does not match the manifest's "
                f"{manifest.run_id!r}"
            )
        found = bytes_digest(report_bytes)
        if found != manifest.report_digest:
            problems.append(
                f"{REPORT_NAME}: digest {found} does not match the run's {manifest.report_digest}"
            )
        pinned = manifest.traces
        reported = {str(t.entry.get("id")) for t in traces}
        for sid in sorted(set(pinned) - reported):
            problems.append(
                f"{MANIFEST_NAME}: scenario {sid} was run, but {REPORT_NAME} does not list it"
            )
    for stored in traces:
        problems += _trace_file_problems(stored, run_id, pinned, manifest is not None)
    return problems


def _parse_manifest(text: str | None, problems: list[str]) -> RunManifest | None:
    if text is None:
        problems.append(
            f"{MANIFEST_NAME}: missing, so nothing pins the traces to the run; re-run the suite "
            "(every `proctor run` writes one)"
        )
        return None
    try:
        return RunManifest.model_validate_json(text)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in error["loc"]) or "(top level)"
        problems.append(f"{MANIFEST_NAME}: not a run manifest: {where}: {error['msg']}")
        return None


def _trace_file_problems(
    stored: StoredTrace, run_id: str, pinned: Mapping[str, Any], has_manifest: bool
) -> list[str]:
    trace, entry, name = stored.trace, stored.entry, stored.file
    sid = str(entry.get("id"))
    problems: list[str] = []
    if trace.scenario_id != sid:
        problems.append(
            f"{name}: is the trace of scenario {trace.scenario_id!r}, but {REPORT_NAME} lists "
            f"it for {sid!r}"
        )
    if trace.run_id != run_id:
        problems.append(f"{name}: run id {trace.run_id!r} does not match the run's {run_id!r}")
    recorded = entry.get("digest")
    if has_manifest:
        record = pinned.get(sid)
        if record is None:
            problems.append(f"{name}: scenario {sid} is not in the run's {MANIFEST_NAME}")
        else:
            if record.file != name:
                problems.append(
                    f"{name}: the manifest pins scenario {sid}'s trace at {record.file}"
                )
            if trace.digest != record.digest:
                problems.append(
                    f"{name}: digest {trace.digest} does not match the run's {record.digest}"
                )
            if recorded != record.digest:
                problems.append(
                    f"{REPORT_NAME}: scenario {sid}'s digest {recorded} does not match the "
                    f"run's {record.digest}"
                )
    elif trace.digest != recorded:
        problems.append(f"{name}: digest {trace.digest} does not match the run's {recorded}")
    problems += [f"{REPORT_NAME}: scenario {sid}: {p}" for p in _summary_problems(entry, trace)]
    problems += [f"{name}: {p}" for p in trace_problems(trace)]
    return problems


def _summary_problems(entry: Mapping[str, Any], trace: Trace) -> list[str]:
    """What report.json says about a scenario must be what its trace says."""
    outcomes: dict[str, int] = {}
    for span in trace.tool_spans:
        outcomes[span.outcome] = outcomes.get(span.outcome, 0) + 1
    expected = {
        "status": trace.status,
        "termination": trace.termination,
        "turns": trace.turns,
        "tool_calls": outcomes,
    }
    return [
        f"{field} {entry.get(field)!r}, but the trace says {value!r}"
        for field, value in expected.items()
        if entry.get(field) != value
    ]


def _listing(head: str, problems: Sequence[str]) -> str:
    lines = [f"{head} ({len(problems)} problem(s)):"]
    lines += [f"  {p}" for p in problems[:_MAX_SHOWN]]
    if len(problems) > _MAX_SHOWN:
        lines.append(f"  ... and {len(problems) - _MAX_SHOWN} more")
    return "\n".join(lines)


# -- the baseline's stored traces ------------------------------------------------------------


def baseline_trace_problems(
    baseline: Baseline, traces: Mapping[str, Mapping[str, Any]], origins: Mapping[str, str]
) -> list[str]:
    """Each stored baseline trace against the baseline's recorded digest, and for consistency.

    `origins` names where each trace came from (a file, or `REF:path` from git). A trace for a
    scenario the baseline does not list is refused too: the diff would show it as the baseline.
    """
    problems: list[str] = []
    for sid, data in sorted(traces.items()):
        where = origins.get(sid, sid)
        record = baseline.scenarios.get(sid)
        if record is None:
            problems.append(
                f"{where}: scenario {sid} is not in the baseline; re-record the baseline"
            )
            continue
        found = digest(dict(data))
        if found != record.trace_digest:
            problems.append(
                f"{where}: digest {found} does not match the baseline's {record.trace_digest}"
            )
        if "run_id" in data:
            problems.append(f"{where}: a baseline trace carries no run_id (it is not digested)")
            continue
        try:
            trace = Trace.model_validate({**data, "run_id": BASELINE_RUN_ID})
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            place = ".".join(str(p) for p in error["loc"]) or "(top level)"
            problems.append(f"{where}: not a trace: {place}: {error['msg']}")
            continue
        problems += [f"{where}: {p}" for p in trace_problems(trace)]
    return problems


def check_baseline_traces(
    origin: str,
    baseline: Baseline,
    traces: Mapping[str, Mapping[str, Any]],
    origins: Mapping[str, str],
) -> None:
    """Raise StoredRunInvalid (exit 3) when the baseline's stored traces do not verify."""
    problems = baseline_trace_problems(baseline, traces, origins)
    if problems:
        head = "the baseline's stored traces do not verify; re-record the baseline"
        raise StoredRunInvalid(origin, None, _listing(head, problems))
