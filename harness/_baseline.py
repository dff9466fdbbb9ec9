"""The recorded baseline: gated metrics, per-scenario check inventory, trace digests, history.

This module is the file format (models, reading, writing, schema); recording a new baseline from
a scored run is `harness._baseline_record`, which uses the gate (the gate reads this format).

`baselines/baseline.json` is a public file format (pydantic, `extra="forbid"`); its JSON Schema
`baselines/baseline.schema.json` is generated from the models (`make schemas`)
and a test fails when it drifts. Rates are stored as integer passed/total (the gate compares
those exactly); `rate` is a convenience for readers, rounded to 6 places, null when absent.
Baseline traces live next to it in `baselines/traces/<scenario_id>.json`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from governance.config import (
    JsonDocument,
    decode_text,
    first_and_rest,
    load_json,
    pydantic_message,
    read_capped,
    render_json,
    schema_document,
    write_atomic,
)
from harness._errors import BaselineError, HarnessError
from harness._results import MetricResult
from harness._scenario import ID_PATTERN
from harness._trace import Trace

BASELINE_VERSION: Literal[1] = 1
BASELINE_DIR = Path(__file__).resolve().parent.parent / "baselines"
BASELINE_PATH = BASELINE_DIR / "baseline.json"
TRACES_DIR = BASELINE_DIR / "traces"
SCHEMA_PATH = BASELINE_DIR / "baseline.schema.json"
SCHEMA_COMMAND = "make schemas"
RATE_PLACES = 6

_ISO_UTC = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"
_DIGEST = r"^sha256:[0-9a-f]{64}$"
_SCENARIO_ID = re.compile(ID_PATTERN)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MetricRecord(_Model):
    """passed/total of one gated metric; `rate` is null exactly when total is 0 (absent)."""

    passed: int = Field(ge=0)
    total: int = Field(ge=0)
    rate: float | None = Field(description="passed/total rounded to 6 places; null when absent.")

    @model_validator(mode="after")
    def _consistent(self) -> MetricRecord:
        if self.passed > self.total:
            raise ValueError(f"passed ({self.passed}) exceeds total ({self.total})")
        expected = rate_of(self.passed, self.total)
        if self.rate != expected:
            raise ValueError(
                f"rate {self.rate} does not match {self.passed}/{self.total} (expected {expected})"
            )
        return self


class ScenarioRecord(_Model):
    checks: list[str] = Field(description="The scenario's check ids, sorted.")
    trace_digest: str = Field(pattern=_DIGEST)
    inputs_digest: str | None = Field(
        default=None,
        pattern=_DIGEST,
        description="Digest of what the scenario feeds the run (definition minus expectations, "
        "policy, tool registry, MCP config). Absent: recorded before inputs were tracked, and "
        "the gate counts the scenario's inputs as changed.",
    )
    inputs: dict[str, Any] | None = Field(
        default=None,
        description="Those inputs, redacted, so the gate can say what changed.",
    )

    @model_validator(mode="after")
    def _sorted_unique(self) -> ScenarioRecord:
        if len(set(self.checks)) != len(self.checks):
            dupes = sorted({c for c in self.checks if self.checks.count(c) > 1})
            raise ValueError(f"duplicate check ids: {', '.join(dupes)}")
        if self.checks != sorted(self.checks):
            raise ValueError("check ids must be sorted")
        return self


class AcceptedChange(_Model):
    """A scenario whose inputs changed, acknowledged (`--accept-changed`) by one recording."""

    scenario: str = Field(pattern=ID_PATTERN)
    inputs_digest: str = Field(pattern=_DIGEST, description="The inputs acknowledged.")
    previous_digest: str | None = Field(
        pattern=_DIGEST, description="The inputs before (null: not recorded before)."
    )


class HistoryRecord(_Model):
    reason: str = Field(min_length=1, description="Why this baseline was recorded.")
    recorded_at: str = Field(
        pattern=_ISO_UTC, description="ISO 8601 UTC from the injected clock: 2026-01-01T00:00:00Z"
    )
    allow_regression: bool = Field(description="Recorded with --allow-regression.")
    summary: str
    accepted_changes: list[AcceptedChange] = Field(
        default_factory=list,
        description="Scenarios whose changed inputs this recording acknowledged.",
    )


class CoverageRecord(_Model):
    """One policy file's coverage items (`rule:<id>`, `budget:<id>`) as recorded."""

    covered: list[str] = Field(description="Items the suite covered, sorted.")
    uncovered: list[str] = Field(description="Items accepted as uncovered, sorted.")


class Baseline(_Model):
    version: Literal[1] = Field(description="The file format version.")
    metrics: dict[str, MetricRecord]
    scenarios: dict[str, ScenarioRecord]
    history: list[HistoryRecord] = Field(description="Append-only: one record per recording.")
    coverage: dict[str, CoverageRecord] | None = Field(
        None,
        description="Per policy file in scope (relative to the project root): what the suite "
        "covered. Absent in older baselines: coverage is then not gated.",
    )


def rate_of(passed: int, total: int) -> float | None:
    return None if total == 0 else round(passed / total, RATE_PLACES)


def metric_results(baseline: Baseline) -> dict[str, MetricResult]:
    """The baseline's metrics as `MetricResult`s (for reports that show baseline vs now)."""
    return {name: MetricResult(name, m.passed, m.total) for name, m in baseline.metrics.items()}


def acknowledged_changes(base: Baseline, head: Baseline) -> dict[tuple[str, str], str] | None:
    """(scenario id, inputs digest) -> reason, for the input changes `head` acknowledged since
    `base` (e.g. a pull request's baseline over the target branch's).

    Only history records `head` appended to `base`'s count, so an old acknowledgement cannot
    vouch for a new change. None when `head`'s history does not extend `base`'s (rebase and
    re-record).
    """
    count = len(base.history)
    if list(head.history[:count]) != list(base.history):
        return None
    return {
        (change.scenario, change.inputs_digest): record.reason
        for record in head.history[count:]
        for change in record.accepted_changes
    }


# -- files ----------------------------------------------------------------------------------


def load_baseline(path: str | Path = BASELINE_PATH) -> Baseline:
    path = Path(path)
    try:
        raw = read_capped(path, BaselineError, subject="baseline file")
    except FileNotFoundError:
        raise BaselineError(
            path, None, "no baseline file; record one with `proctor baseline record --reason ...`"
        ) from None
    except OSError as exc:
        raise BaselineError(
            path, None, f"cannot read the baseline ({exc.strerror or exc}); check the path"
        ) from None
    text = decode_text(raw, str(path), BaselineError, subject="baseline file", yaml_breaks=False)
    return load_baseline_text(text, str(path))


_RERECORD = (
    f"the format is {SCHEMA_PATH.name}; re-record with `proctor baseline record` rather than "
    "editing by hand"
)


def load_baseline_text(text: str, origin: str = "<baseline>") -> Baseline:
    """Parse and validate baseline JSON; every error names `origin`, the line and the fix."""
    document = load_json(text, origin, BaselineError, subject="baseline file")
    if not isinstance(document.data, dict):
        raise BaselineError(
            origin,
            1,
            "a baseline is a JSON object with version, metrics, scenarios and history; "
            + _RERECORD,
        )
    try:
        return Baseline.model_validate(document.data)
    except ValidationError as exc:
        raise _validation_error(exc, document, origin) from None


def _validation_error(exc: ValidationError, document: JsonDocument, origin: str) -> BaselineError:
    """The first problem at its line; up to nine more, each as `FILE:LINE: ...`."""
    found: list[tuple[int, str]] = []
    for error in exc.errors(include_url=False):
        line, where = document.where(tuple(error["loc"]))
        message = pydantic_message(error)
        found.append((line, f"invalid baseline: {where or '(top level)'}: {message}"))
    line, message = first_and_rest(origin, found)
    first, _, rest = message.partition("\n")
    return BaselineError(origin, line, f"{first} ({_RERECORD})" + (f"\n{rest}" if rest else ""))


def load_trace_json(text: str, origin: str) -> JsonDocument:
    """A stored trace's JSON, checked as strictly as the baseline (errors are BaselineError)."""
    document = load_json(text, origin, BaselineError, subject="stored trace")
    if not isinstance(document.data, dict):
        raise BaselineError(origin, 1, "a stored trace is a JSON object; re-record the baseline")
    return document


def write_baseline(baseline: Baseline, path: str | Path = BASELINE_PATH) -> Path:
    path = Path(path)
    write_atomic(path, render_json(baseline.model_dump(mode="json")))
    return path


def write_baseline_traces(
    traces: Iterable[Trace], directory: str | Path = TRACES_DIR
) -> list[Path]:
    """Store each trace's stable dict as `<scenario_id>.json`; remove files of gone scenarios."""
    directory = Path(directory)
    wanted: dict[str, Trace] = {}
    for trace in traces:
        if not _SCENARIO_ID.match(trace.scenario_id):
            raise HarnessError(f"scenario id {trace.scenario_id!r} is not a safe file name")
        if trace.scenario_id in wanted:
            raise HarnessError(f"two traces for scenario {trace.scenario_id}")
        wanted[trace.scenario_id] = trace
    written = []
    for sid, trace in sorted(wanted.items()):
        path = directory / f"{sid}.json"
        write_atomic(path, render_json(trace.stable_dict()))
        written.append(path)
    if directory.is_dir():
        for stale in sorted(directory.glob("*.json")):
            if stale.stem not in wanted:
                stale.unlink()
    return written


def load_baseline_traces(directory: str | Path = TRACES_DIR) -> dict[str, dict[str, Any]]:
    """scenario id -> stored stable trace dict; an absent directory means no stored traces."""
    directory = Path(directory)
    if not directory.is_dir():
        return {}
    traces: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.glob("*.json")):
        where = str(path)
        try:
            raw = read_capped(path, BaselineError, subject="stored trace")
        except OSError as exc:
            raise BaselineError(
                path, None, f"cannot read the stored trace ({exc.strerror or exc})"
            ) from None
        text = decode_text(raw, where, BaselineError, subject="stored trace", yaml_breaks=False)
        document = load_trace_json(text, where)
        data = document.data
        if data.get("scenario_id") != path.stem:
            raise BaselineError(
                path,
                document.line_of(("scenario_id",)),
                f"the stored trace is of scenario {data.get('scenario_id')!r}, not {path.stem!r}; "
                "re-record the baseline",
            )
        traces[path.stem] = data
    return traces


# -- schema ---------------------------------------------------------------------------------


def baseline_json_schema() -> dict[str, Any]:
    """The JSON Schema of `baselines/baseline.json`."""
    return schema_document(Baseline.model_json_schema(), "Proctor baseline")


def render_baseline_schema() -> str:
    """The schema exactly as committed."""
    return render_json(baseline_json_schema())


def write_baseline_schema(path: str | Path = SCHEMA_PATH) -> Path:
    path = Path(path)
    write_atomic(path, render_baseline_schema())
    return path

