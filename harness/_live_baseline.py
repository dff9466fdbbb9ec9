"""The live baseline file (`baselines/live/<model>.json`): one model's recorded repeat rates.

Kept apart from the deterministic baseline on purpose: a live model's rates are samples with
intervals, a replay run's are exact; gating one against the other is what made a stub run
"regress" on every scripted answer. Recorded deliberately (`proctor baseline record --live`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from governance.config import decode_text, load_json, read_capped, render_json, write_atomic
from harness._errors import BaselineError
from harness._repeat_values import ScenarioRepeats

LIVE_BASELINE_DIR = Path("baselines/live")
LIVE_BASELINE_VERSION = 1
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LiveScenarioRecord(_Model):
    runs: int = Field(ge=1)
    passes: int = Field(ge=0)
    metrics: dict[str, tuple[int, int]] = Field(
        default_factory=dict, description="metric -> [passed, total] over all runs."
    )


class LiveBaseline(_Model):
    version: int = LIVE_BASELINE_VERSION
    kind: str = Field(default="live", pattern="^live$")
    model: str = Field(min_length=1)
    endpoint_host: str
    repeat: int = Field(ge=1)
    reason: str = Field(min_length=1)
    recorded_at: str
    scenarios: dict[str, LiveScenarioRecord]

    def as_repeats(self) -> tuple[ScenarioRepeats, ...]:
        return tuple(
            ScenarioRepeats(sid, r.passes, r.runs, dict(r.metrics))
            for sid, r in sorted(self.scenarios.items())
        )


def live_baseline_path(model: str, directory: Path = LIVE_BASELINE_DIR) -> Path:
    """`baselines/live/<model>.json`, the model id made a safe file name (`org/m:1` ->
    `org_m_1`); never a path that leaves `directory`."""
    name = _UNSAFE.sub("_", model).strip("._") or "model"
    return directory / f"{name}.json"


def load_live_baseline(path: Path) -> LiveBaseline:
    try:
        raw = read_capped(path, BaselineError, subject="live baseline file")
    except OSError as exc:
        raise BaselineError(path, None, f"cannot read the live baseline ({exc})") from None
    text = decode_text(
        raw, str(path), BaselineError, subject="live baseline file", yaml_breaks=False
    )
    document = load_json(text, str(path), BaselineError, subject="live baseline file")
    try:
        return LiveBaseline.model_validate(document.data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        line, _ = document.where(tuple(first["loc"]))
        raise BaselineError(
            path,
            line,
            f"invalid live baseline: {where}: {first['msg']}; re-record it with "
            "`proctor baseline record --live ...` rather than editing by hand",
        ) from None


def build_live_baseline(
    scenarios: Iterable[ScenarioRepeats],
    *,
    model: str,
    endpoint_host: str,
    repeat: int,
    reason: str,
    recorded_at: str,
) -> LiveBaseline:
    return LiveBaseline(
        model=model,
        endpoint_host=endpoint_host,
        repeat=repeat,
        reason=reason,
        recorded_at=recorded_at,
        scenarios={
            s.scenario_id: LiveScenarioRecord(runs=s.runs, passes=s.passes, metrics=dict(s.metrics))
            for s in scenarios
        },
    )


def write_live_baseline(baseline: LiveBaseline, path: Path) -> Path:
    write_atomic(path, render_json(baseline.model_dump(mode="json")))
    return path
