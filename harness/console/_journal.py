"""What the console remembers about its agent turns beyond the stored run: who asked, when,
and how the turn ended (`cancelled` when the console shut down while it waited), so a page
reload or a console restart lists and shows every turn.

`<state_dir>/console/sessions/<run_id>.json`, written atomically; the run itself (transcript,
held call) stays in the RunStore, its events on the audit chain.
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from harness._errors import HarnessError

SessionStatus = Literal[
    "running",
    "waiting_approval",
    "completed",
    "blocked",
    "failed",
    "max_steps",
    "provider_error",
    "input_rejected",
    "cancelled",  # the console shut down while the turn waited: request withdrawn, not run
    "interrupted",  # the console process ended while the turn ran (read back after a restart)
]
LIVE_STATUSES: frozenset[SessionStatus] = frozenset({"running", "waiting_approval"})


class SessionRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    operator: str
    request: str  # redacted: listings show it
    started_at: dt.datetime
    status: SessionStatus
    detail: str = ""


class SessionJournal:
    """One small JSON file per console turn."""

    def __init__(self, state_dir: Path) -> None:
        self.root = state_dir / "console" / "sessions"

    def _path(self, run_id: str) -> Path:
        if not run_id or any(c in run_id for c in "/\\\0") or run_id.startswith("."):
            raise HarnessError(f"invalid run id {run_id!r}")
        return self.root / f"{run_id}.json"

    def save(self, record: SessionRecord) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".session-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(record.model_dump_json())
            os.replace(tmp, self._path(record.run_id))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def load(self, run_id: str) -> SessionRecord | None:
        """The record, or None when there is none (or it cannot be read as one)."""
        try:
            text = self._path(run_id).read_text(encoding="utf-8")
            return SessionRecord.model_validate_json(text)
        except (OSError, ValidationError, HarnessError):
            return None

    def all(self) -> list[SessionRecord]:
        if not self.root.is_dir():
            return []
        records = (self.load(path.stem) for path in self.root.glob("*.json"))
        return [r for r in records if r is not None]
