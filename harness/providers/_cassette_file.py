"""The cassette file: one scenario's provider exchanges, as canonical JSON.

`cassettes/NAME/<scenario id>.json` holds a small header (format, scenario, the model asked and
the endpoint's host, never its full URL: a URL may carry a token) and the exchanges in order:
each the canonical request body and the reply the loop read (text, tool calls, finish reason,
usage) or the provider error it got. No wall-clock time, no response ids or timestamps: the
same answers recorded again give the same bytes. Files are written whole and atomically, each
by the worker that ran its scenario, so `-j N` workers never share a file.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from harness._errors import CassetteError

__all__ = [
    "CASSETTE_FORMAT",
    "FILL_FIX",
    "REPLAY_FIX",
    "CassetteFile",
    "Exchange",
    "cassette_path",
    "dump_cassette",
    "load_cassette",
    "pretty_json",
    "write_cassette",
]

CASSETTE_FORMAT = "proctor-cassette/1"
# A scenario id is `[a-z0-9][a-z0-9_.-]*` (the scenario schema): anything else, a separator, a
# leading dot or a name that is too long, never names a file.
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,150}")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RecordedCall(_Model):
    id: str
    name: str
    arguments: str


class RecordedUsage(_Model):
    prompt_tokens: int
    completion_tokens: int


class RecordedReply(_Model):
    text: str | None
    tool_calls: list[RecordedCall] = []
    finish_reason: str | None = None
    usage: RecordedUsage | None = None


class RecordedError(_Model):
    kind: str
    message: str
    status: int | None = None


class Exchange(_Model):
    """One request and what came back: a reply or a provider error (never both)."""

    request: dict[str, Any]
    reply: RecordedReply | None = None
    error: RecordedError | None = None

    @model_validator(mode="after")
    def _one_outcome(self) -> Exchange:
        if (self.reply is None) == (self.error is None):
            raise ValueError("an exchange holds exactly one of `reply` and `error`")
        return self


class CassetteFile(_Model):
    format: Literal["proctor-cassette/1"]
    scenario: str
    model: str
    endpoint_host: str
    exchanges: list[Exchange]


@dataclass(frozen=True, slots=True)
class CassetteDir:
    """A cassette directory as a run names it: `cassette:NAME` in traces (the directory's own
    name, so a trace does not depend on where the cassette is checked out)."""

    path: Path

    @property
    def name(self) -> str:
        return self.path.resolve().name or str(self.path)


def cassette_path(directory: Path, scenario_id: str) -> Path:
    """The file of `scenario_id` in `directory`; an id that could leave the directory (a
    separator, `..`, a leading dot) is refused, never rewritten into another name."""
    if not _SAFE_NAME.fullmatch(scenario_id) or scenario_id in {".", ".."}:
        raise CassetteError(
            directory,
            None,
            f"scenario id {scenario_id!r} cannot name a cassette file: ids are letters, digits, "
            "'.', '_' and '-', starting with a letter or digit (rename the scenario)",
        )
    return directory / f"{scenario_id}.json"


def pretty_json(value: Any) -> str:
    """Sorted keys, two-space indent, fixed separators, ASCII only: equal values, equal text."""
    return json.dumps(value, sort_keys=True, indent=2, separators=(",", ": "), ensure_ascii=True)


def dump_cassette(cassette: CassetteFile) -> bytes:
    return (pretty_json(cassette.model_dump(mode="json")) + "\n").encode("ascii")


def write_cassette(path: Path, cassette: CassetteFile) -> None:
    """Write the whole file atomically (a temporary file in the same directory, then rename):
    a killed run leaves the old file or the new one, never half of one."""
    data = dump_cassette(cassette)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise CassetteError(path, None, f"cannot write the cassette: {exc}") from None


REPLAY_FIX = "record it again (proctor run --record DIR) or restore it from version control"
# --record-missing replays what a file holds, so it cannot fill a file it cannot read.
FILL_FIX = (
    "--record-missing replays what the file holds: record the whole cassette afresh (--record "
    "DIR without --record-missing replaces every file without reading it), or delete this file"
)


def load_cassette(path: Path, scenario_id: str, *, fix: str = REPLAY_FIX) -> CassetteFile | None:
    """The cassette of `scenario_id` at `path`; None when there is no such file. A file that is
    not valid JSON, is truncated, has another format version or another scenario is refused
    with an error naming it and `fix`."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CassetteError(path, None, f"cannot read the cassette: {exc}; {fix}") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CassetteError(path, None, f"not UTF-8 ({exc.reason}); {fix}") from None
    except json.JSONDecodeError as exc:
        raise CassetteError(
            path, exc.lineno, f"not valid JSON (truncated?): {exc.msg}; {fix}"
        ) from None
    except RecursionError:
        raise CassetteError(path, None, f"JSON nested too deep; {fix}") from None
    if not isinstance(data, dict):
        raise CassetteError(path, 1, f"a cassette is a JSON object; {fix}")
    found = data.get("format")
    if found != CASSETTE_FORMAT:
        raise CassetteError(
            path,
            None,
            f"format {found!r} is not {CASSETTE_FORMAT!r}, the one this Proctor reads; {fix}",
        )
    try:
        cassette = CassetteFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise CassetteError(path, None, f"{where}: {first['msg']}; {fix}") from None
    if cassette.scenario != scenario_id:
        raise CassetteError(
            path,
            None,
            f"it records scenario {cassette.scenario!r}, not {scenario_id!r}; {fix}",
        )
    return cassette
