"""Stored runs: a held run is saved with what it needs to be resumed by another process."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from governance.screening import DEFAULT_CLAIMS_MODE, ClaimsMode
from harness._errors import HarnessError, UsageProblem
from harness._loop import RunState


class RunNotFound(HarnessError):
    """No stored run has that id."""


class ProviderSpec(BaseModel):
    """How to rebuild the provider on resume. Never holds an API key (that comes from env)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["replay", "openai"]
    script: list[Any] | None = None
    base_url: str | None = None
    model: str | None = None


class StoredRun(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: ProviderSpec
    max_steps: int
    claims: ClaimsMode = DEFAULT_CLAIMS_MODE
    state: RunState


class RunStore:
    """`<state_dir>/runs/<run_id>.json`, written atomically (temp file + rename)."""

    def __init__(self, state_dir: Path) -> None:
        self.root = state_dir / "runs"

    def path(self, run_id: str) -> Path:
        if not run_id or "/" in run_id or "\\" in run_id or run_id.startswith("."):
            raise UsageProblem(
                f"invalid run id {run_id!r}: a run id is a file name under {self.root} "
                "(no '/' or '\\', not starting with '.'); use e.g. run-1"
            )
        return self.root / f"{run_id}.json"

    def save(self, run: StoredRun) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        target = self.path(run.state.run_id)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".run-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(run.model_dump_json(indent=2))
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target

    def load(self, run_id: str) -> StoredRun:
        path = self.path(run_id)
        if not path.is_file():
            known = sorted(p.stem for p in self.root.glob("*.json")) if self.root.is_dir() else []
            hint = f"; stored runs: {', '.join(known[-5:])}" if known else ""
            raise RunNotFound(f"no stored run {run_id!r} under {self.root}{hint}")
        return StoredRun.model_validate_json(path.read_text(encoding="utf-8"))
