"""The live baseline file (`baselines/live/<model>.json`): one model's recorded repeat rates.

Kept apart from the deterministic baseline on purpose: a live model's rates are samples with
intervals, a replay run's are exact; gating one against the other is what made a stub run
"regress" on every scripted answer. Recorded deliberately (`proctor baseline record --live`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from governance.config import decode_text, load_json, read_capped, render_json, write_atomic
from harness._errors import BaselineError
from harness._repeat_values import ScenarioRepeats

LIVE_BASELINE_DIR = Path("baselines/live")
LIVE_BASELINE_VERSION = 1
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-")
_MAX_NAME = 200  # bytes of a file name, well under the usual 255


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LiveScenarioRecord(_Model):
    runs: int = Field(ge=1)
    passes: int = Field(ge=0)
    metrics: dict[str, tuple[int, int]] = Field(
        default_factory=dict, description="metric -> [passed, total] over all runs."
    )
    checks: list[str] = Field(
        default_factory=list,
        description="Every check id the scenario produced: one missing from a later run is a "
        "lost_check (a weakened expectation), not a pass.",
    )
    inputs_digest: str | None = Field(
        default=None,
        description="The scenario's inputs without the model: a scenario changed under the same "
        "id is reported as changed inputs, to be re-recorded deliberately.",
    )


class LiveHistoryRecord(_Model):
    reason: str = Field(min_length=1)
    recorded_at: str
    model: str
    repeat: int = Field(ge=1)
    allow_regression: bool = False
    summary: str


class LiveBaseline(_Model):
    version: int = LIVE_BASELINE_VERSION
    kind: str = Field(default="live", pattern="^live$")
    model: str = Field(min_length=1)
    endpoint_host: str
    repeat: int = Field(ge=1)
    reason: str = Field(min_length=1)
    recorded_at: str
    scenarios: dict[str, LiveScenarioRecord]
    history: list[LiveHistoryRecord] = Field(
        default_factory=list, description="Every recording, oldest first, with its reason."
    )

    def as_repeats(self) -> tuple[ScenarioRepeats, ...]:
        return tuple(
            ScenarioRepeats(
                sid,
                r.passes,
                r.runs,
                dict(r.metrics),
                checks=tuple(r.checks),
                inputs_digest=r.inputs_digest,
            )
            for sid, r in sorted(self.scenarios.items())
        )


def live_baseline_path(model: str, directory: Path = LIVE_BASELINE_DIR) -> Path:
    """`baselines/live/<name>.json`: the model id escaped to a file name, one to one.

    Letters, digits, `-` and `.` stay; every other character (and a leading `.`) becomes `_`
    and its UTF-8 bytes in hex (`org/m:1` -> `org_2fm_3a1`, `org_m:1` -> `org_5fm_3a1`), so two
    model ids never share a file and the name never leaves `directory`. A name too long for a
    file system keeps a prefix and a hash of the whole id. The file also stores the model id,
    checked when it is used (a case-insensitive file system can still fold two ids together).
    """
    parts = []
    for i, char in enumerate(model):
        if char in _SAFE and not (i == 0 and char == "."):
            parts.append(char)
        else:
            parts.append("".join(f"_{b:02x}" for b in char.encode("utf-8")))
    name = "".join(parts) or "_"
    if len(name) > _MAX_NAME:
        whole = hashlib.sha256(model.encode("utf-8")).hexdigest()[:16]
        name = f"{name[: _MAX_NAME - 18]}_~{whole}"
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
    history: Sequence[LiveHistoryRecord] = (),
) -> LiveBaseline:
    """The baseline of `scenarios`; `history` is the previous file's plus this recording's."""
    return LiveBaseline(
        model=model,
        endpoint_host=endpoint_host,
        repeat=repeat,
        reason=reason,
        recorded_at=recorded_at,
        scenarios={
            s.scenario_id: LiveScenarioRecord(
                runs=s.runs,
                passes=s.passes,
                metrics=dict(s.metrics),
                checks=list(s.checks),
                inputs_digest=s.inputs_digest,
            )
            for s in scenarios
        },
        history=list(history),
    )


def write_live_baseline(baseline: LiveBaseline, path: Path) -> Path:
    write_atomic(path, render_json(baseline.model_dump(mode="json")))
    return path
