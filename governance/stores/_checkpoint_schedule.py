"""Checkpoints written by the gateway itself: every N events, and when it closes.

`CheckpointingAuditLog` wraps any audit backend and keeps its interface (the firewall cannot
tell). After a write that brings the count of events since the last checkpoint to `every`, and
on `close()`, it re-verifies the log and signs a checkpoint of every run into `path`.

A checkpoint that cannot be written does NOT fail the call whose event triggered it: that
event is already recorded, and what failed is the anchoring of history, not the record. The
failure is kept in `errors` (the gateway exposes it) and retried at the next threshold, and
`proctor audit checkpoint` can always be run by hand.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from governance.core._clock import Clock
from governance.core._errors import GovernanceError
from governance.stores._audit import AuditEvent
from governance.stores._audit_chain import ChainVerdict
from governance.stores._backends import AuditBackend
from governance.stores._checkpoint import CheckpointBody, write_checkpoint
from governance.stores._checkpoint_file import CheckpointError
from governance.stores._checkpoint_keys import PRIVATE_KEY_ENV, CheckpointKeyError, load_private_key

FILE_ENV: Final = "PROCTOR_CHECKPOINT_FILE"
EVERY_ENV: Final = "PROCTOR_CHECKPOINT_EVERY"


@dataclass(frozen=True, slots=True)
class CheckpointSchedule:
    """Where and when the gateway checkpoints its audit log, and the key it signs with.

    `every`: after this many events (None: only on close). `on_close`: once more at close.
    """

    path: Path
    private_key: Ed25519PrivateKey
    every: int | None = None
    on_close: bool = True

    def __post_init__(self) -> None:
        if self.every is not None and (not isinstance(self.every, int) or self.every < 1):
            raise ValueError(f"checkpoint every must be a positive number of events: {self.every}")


class CheckpointingAuditLog:
    """An AuditBackend that writes signed checkpoints of itself on a schedule."""

    def __init__(self, inner: AuditBackend, schedule: CheckpointSchedule, clock: Clock) -> None:
        self.inner = inner
        self.schedule = schedule
        self._clock = clock
        self._lock = threading.Lock()
        self._since = 0
        self.written: list[CheckpointBody] = []
        self.errors: list[str] = []
        self._closed = False

    @property
    def alg(self) -> str:
        return self.inner.alg

    def digest_arguments(self, arguments: Mapping[str, Any]) -> str:
        return self.inner.digest_arguments(arguments)

    def append(self, run_id: str, kind: str, data: Mapping[str, Any]) -> AuditEvent:
        event = self.inner.append(run_id, kind, data)
        self._count(1)
        return event

    def append_many(
        self, run_id: str, events: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> list[AuditEvent]:
        out = self.inner.append_many(run_id, events)
        self._count(len(out))
        return out

    def _count(self, n: int) -> None:
        every = self.schedule.every
        if every is None:
            return
        with self._lock:
            self._since += n
            if self._since < every:
                return
            self._since = 0
            self._write()

    def checkpoint(self) -> CheckpointBody | None:
        """Write a checkpoint now; None (and the reason in `errors`) if it failed."""
        with self._lock:
            return self._write()

    def _write(self) -> CheckpointBody | None:
        """Call under the lock."""
        try:
            body = write_checkpoint(
                self.inner, self.schedule.path, private_key=self.schedule.private_key,
                clock=self._clock,
            )  # fmt: skip
        except GovernanceError as exc:  # CheckpointError, or the log could not be read
            self.errors.append(str(exc))
            return None
        self.written.append(body)
        return body

    def run_ids(self) -> list[str]:
        return self.inner.run_ids()

    def head(self, run_id: str) -> str | None:
        return self.inner.head(run_id)

    def events(self, run_id: str) -> list[AuditEvent]:
        return self.inner.events(run_id)

    def verify(self, run_id: str) -> ChainVerdict:
        return self.inner.verify(run_id)

    def verify_all(self) -> list[ChainVerdict]:
        return self.inner.verify_all()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self.schedule.on_close:
                self.checkpoint()
        finally:
            self.inner.close()


def schedule_from_env(environ: Mapping[str, str] | None = None) -> CheckpointSchedule | None:
    """The schedule `PROCTOR_CHECKPOINT_FILE` asks for (None when unset), signed with the key
    in `PROCTOR_CHECKPOINT_KEY`, every `PROCTOR_CHECKPOINT_EVERY` events (unset: on close only).
    A file without a key refuses to start: no gateway writes unsigned checkpoints."""
    env = os.environ if environ is None else environ
    target = env.get(FILE_ENV, "")
    if not target:
        return None
    key_path = env.get(PRIVATE_KEY_ENV, "")
    if not key_path:
        raise CheckpointKeyError(
            f"{FILE_ENV} is set but {PRIVATE_KEY_ENV} is not: refusing to write unsigned "
            f"checkpoints; set {PRIVATE_KEY_ENV} to a key from `proctor audit keygen`"
        )
    every_text = env.get(EVERY_ENV, "").strip()
    every: int | None = None
    if every_text:
        try:
            every = int(every_text)
        except ValueError:
            every = 0
        if every < 1:
            raise CheckpointError(
                f"{EVERY_ENV}={every_text!r} is not a positive whole number of events"
            )
    return CheckpointSchedule(Path(target), load_private_key(Path(key_path)), every=every)
