"""Signed audit checkpoints: every run's head anchored outside the database.

The hash chain proves that what a run holds was not altered, but not that nothing is missing:
deleting a run's newest events, or a whole run, leaves chains that verify. A checkpoint records,
for every run in the log at one moment, its head hash, event count and last seq, plus the log's
identity, the chain algorithm, a creation time (from the injected clock) and a format version,
and signs that with Ed25519. Verified later against the log, it names each run that was
truncated, deleted or rewritten since, and accepts events appended after it.

File format (JSON): `{"payload": "<canonical JSON of the body>", "signature": {"alg": "ed25519",
"key_id": ..., "value": <base64>}}`. The signature covers the exact payload bytes (prefixed by
a domain label), so the verifier checks the bytes it was given before it parses anything.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from governance.core._canonical import canonical_json
from governance.core._clock import Clock
from governance.stores._audit import AuditLog
from governance.stores._audit_chain import ChainVerdict
from governance.stores._backends import AuditBackend
from governance.stores._checkpoint_file import (
    CheckpointError,
    CheckpointFileError,
    read_bounded,
    write_atomic,
)
from governance.stores._checkpoint_identity import ensure_log_id, read_log_id
from governance.stores._checkpoint_keys import key_id
from governance.stores._sqlite import utc_text

FORMAT: Final = "proctor-audit-checkpoint"
FORMAT_VERSION: Final = 1
_DOMAIN: Final = b"proctor-audit-checkpoint/v1\n"

RunStatus = Literal["unchanged", "appended", "new", "truncated", "deleted", "rewritten", "broken"]
_FINE: Final = frozenset({"unchanged", "appended", "new"})


class CheckpointSignatureError(CheckpointError):
    """The checkpoint's signature does not verify with the given public key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class RunHead(_Strict):
    """One run as checkpointed."""

    head: str = Field(min_length=1)
    events: int = Field(ge=1)
    last_seq: int = Field(ge=1)


class CheckpointBody(_Strict):
    """What is signed."""

    format: Literal["proctor-audit-checkpoint"]
    format_version: Literal[1]
    log_id: str = Field(min_length=1)
    created_at: str = Field(min_length=1)
    chain_alg: str
    key_id: str
    run_count: int = Field(ge=0)
    runs: dict[str, RunHead]

    @model_validator(mode="after")
    def _count_matches(self) -> CheckpointBody:
        if self.run_count != len(self.runs):
            raise ValueError(f"run_count is {self.run_count} but {len(self.runs)} runs are listed")
        return self


class _Signature(_Strict):
    alg: Literal["ed25519"]
    key_id: str
    value: str


class _Envelope(_Strict):
    payload: str
    signature: _Signature


@dataclass(frozen=True, slots=True)
class RunFinding:
    """How one run compares with the checkpoint. `status` in unchanged/appended/new is fine."""

    run_id: str
    status: RunStatus
    checkpoint_events: int | None
    log_events: int
    detail: str

    @property
    def ok(self) -> bool:
        return self.status in _FINE


@dataclass(frozen=True, slots=True)
class CheckpointReport:
    """The verdict of a log against a checkpoint: `ok` unless a run was truncated, deleted,
    rewritten or broken, or the checkpoint belongs to another log (`problem`)."""

    checkpoint: CheckpointBody
    findings: list[RunFinding] = field(default_factory=list)
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None and all(f.ok for f in self.findings)


def _verdicts(log: AuditBackend) -> dict[str, ChainVerdict]:
    return {v.run_id: v for v in log.verify_all()}


def build_body(
    log: AuditBackend,
    *,
    clock: Clock,
    signing_key_id: str,
    verdicts: Mapping[str, ChainVerdict] | None = None,
) -> CheckpointBody:
    """The body of a checkpoint of `log` now (`verdicts`: the log verified a moment ago, when
    the caller has them). Refuses (CheckpointError) while any chain is broken: a checkpoint
    anchors verified history, never damage."""
    if verdicts is None:
        verdicts = _verdicts(log)
    broken = [v for v in verdicts.values() if not v.ok]
    if broken:
        named = ", ".join(f"{v.run_id!r} at seq {v.first_bad_seq} ({v.reason})" for v in broken[:5])
        raise CheckpointError(
            f"refusing to checkpoint a log with {len(broken)} broken chain(s): {named}; "
            "run `proctor audit verify` and investigate first"
        )
    runs = {
        run_id: RunHead(head=str(v.head), events=v.events, last_seq=v.events)
        for run_id, v in verdicts.items()
    }
    algs = {v.alg for v in verdicts.values()}
    return CheckpointBody(
        format=FORMAT,
        format_version=FORMAT_VERSION,
        log_id=ensure_log_id(log),
        created_at=utc_text(clock.now()),
        chain_alg=str(algs.pop()) if len(algs) == 1 else (log.alg if not algs else "mixed"),
        key_id=signing_key_id,
        run_count=len(runs),
        runs=runs,
    )


def sign_body(body: CheckpointBody, private_key: Ed25519PrivateKey) -> bytes:
    """The checkpoint file's bytes: the canonical body and its Ed25519 signature."""
    payload = canonical_json(body.model_dump(mode="json")).decode("utf-8")
    signature = private_key.sign(_DOMAIN + payload.encode("utf-8"))
    envelope = {
        "payload": payload,
        "signature": {
            "alg": "ed25519",
            "key_id": key_id(private_key.public_key()),
            "value": base64.b64encode(signature).decode("ascii"),
        },
    }
    return canonical_json(envelope) + b"\n"


class CheckpointOverwriteRefused(CheckpointError):
    """The checkpoint already at the path shows the log was tampered with since (or cannot be
    read as ours): overwriting it would sign the damage and erase the evidence."""


def write_checkpoint(
    log: AuditBackend,
    path: Path,
    *,
    private_key: Ed25519PrivateKey,
    clock: Clock,
    replace_unverified: bool = False,
) -> CheckpointBody:
    """Checkpoint `log` into `path` (atomic, mode 0600). There is no unsigned variant.

    A checkpoint already at `path` is the anchor the new one would replace, so the log is first
    compared with it: a run truncated, deleted or rewritten since, another log's checkpoint, or
    a file that does not verify with this key raises CheckpointOverwriteRefused and writes
    nothing (otherwise whoever can write the log truncates it and waits for the next scheduled
    checkpoint to sign the result). `replace_unverified=True` overwrites anyway: an operator's
    deliberate choice after looking (`proctor audit checkpoint --force`)."""
    verdicts = _verdicts(log)  # one pass over the log serves the comparison and the new body
    if not replace_unverified and path.exists():
        _check_previous(log, path, private_key, verdicts)
    body = build_body(
        log, clock=clock, signing_key_id=key_id(private_key.public_key()), verdicts=verdicts
    )
    data = sign_body(body, private_key)
    try:
        write_atomic(path, data, mode=0o600)
    except OSError as exc:
        raise CheckpointFileError(f"cannot write checkpoint {path}: {exc}") from exc
    return body


def _check_previous(
    log: AuditBackend,
    path: Path,
    private_key: Ed25519PrivateKey,
    verdicts: Mapping[str, ChainVerdict],
) -> None:
    try:
        previous = read_checkpoint(path, private_key.public_key())
    except CheckpointError as exc:
        raise CheckpointOverwriteRefused(
            f"{path} holds no checkpoint this key can verify ({exc}); refusing to replace it: "
            "look at it, then remove it or pass --force"
        ) from exc
    report = compare(previous, log, verdicts)
    if report.ok:
        return
    damage = report.problem or "; ".join(
        f"{f.run_id}: {f.status} ({f.detail})" for f in report.findings if not f.ok
    )
    raise CheckpointOverwriteRefused(
        f"the log no longer matches the checkpoint in {path}: {damage}; refusing to sign over "
        "it (the old checkpoint is the evidence). Investigate with `proctor audit verify "
        "--checkpoint`; pass --force only to anchor the current state deliberately"
    )


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _parse_json(data: bytes, where: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise CheckpointFileError(
            f"{where} is not valid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg}): "
            "truncated or corrupted; use an intact copy or write a new checkpoint"
        ) from exc
    except (UnicodeDecodeError, ValueError) as exc:
        raise CheckpointFileError(f"{where} is not a checkpoint: {exc}") from exc


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors()
    )


def read_checkpoint(path: Path, public_key: Ed25519PublicKey) -> CheckpointBody:
    """The body of the checkpoint in `path` once its signature verifies with `public_key`.

    CheckpointFileError: unreadable, truncated or not a checkpoint (naming the file).
    CheckpointSignatureError: signed by another key, or altered/forged since it was signed.
    """
    envelope_data = _parse_json(read_bounded(path), f"checkpoint {path}")
    try:
        envelope = _Envelope.model_validate(envelope_data)
    except ValidationError as exc:
        raise CheckpointFileError(
            f"checkpoint {path} is not a Proctor audit checkpoint: {_problems(exc)}"
        ) from exc
    expected = key_id(public_key)
    if envelope.signature.key_id != expected:
        raise CheckpointSignatureError(
            f"checkpoint {path} was signed by key {envelope.signature.key_id}, but the public key "
            f"given is {expected}: wrong public key, or a checkpoint signed by someone else"
        )
    try:
        signature = base64.b64decode(envelope.signature.value, validate=True)
        public_key.verify(signature, _DOMAIN + envelope.payload.encode("utf-8"))
    except (InvalidSignature, binascii.Error, ValueError) as exc:
        raise CheckpointSignatureError(
            f"checkpoint {path}: the signature does not verify with key {expected}; "
            "the checkpoint was altered or forged after it was signed"
        ) from exc
    body_data = _parse_json(envelope.payload.encode("utf-8"), f"checkpoint {path} payload")
    try:
        body = CheckpointBody.model_validate(body_data)
    except ValidationError as exc:  # signed, yet malformed: a format this version cannot read
        raise CheckpointFileError(
            f"checkpoint {path} has a signed payload this version cannot read: {_problems(exc)}"
        ) from exc
    if body.key_id != expected:
        raise CheckpointSignatureError(
            f"checkpoint {path} names key {body.key_id} inside its payload but is signed by "
            f"{expected}"
        )
    return body


def _hash_at(log: AuditBackend, run_id: str, seq: int) -> str | None:
    if isinstance(log, AuditLog):
        rows = log._query(
            "SELECT hash FROM audit_events WHERE run_id = ? AND seq = ?", (run_id, seq)
        )
        return str(rows[0][0]) if rows else None
    events = log.events(run_id)
    return events[seq - 1].hash if 0 < seq <= len(events) else None


def compare(
    body: CheckpointBody,
    log: AuditBackend,
    verdicts: Mapping[str, ChainVerdict] | None = None,
) -> CheckpointReport:
    """How `log` stands against a (verified) checkpoint body, run by run (`verdicts`: the log
    verified a moment ago, when the caller has them)."""
    log_id = read_log_id(log)
    if log_id != body.log_id:
        found = "no identity (never checkpointed, or its identity was removed)" if log_id is None \
            else f"identity {log_id}"  # fmt: skip
        return CheckpointReport(
            body,
            problem=f"the checkpoint is of log {body.log_id}, but this log has {found}: "
            "a checkpoint of another log, or this log was replaced",
        )
    if verdicts is None:
        verdicts = _verdicts(log)
    findings = [_finding(run_id, head, verdicts.get(run_id), log) for run_id, head in
                body.runs.items()]  # fmt: skip
    for run_id, verdict in verdicts.items():
        if run_id not in body.runs:
            findings.append(_new_run(verdict))
    findings.sort(key=lambda f: f.run_id)
    return CheckpointReport(body, findings)


def _broken(verdict: ChainVerdict, anchored: int | None) -> RunFinding:
    return RunFinding(
        verdict.run_id, "broken", anchored, verdict.events,
        f"chain broken at seq {verdict.first_bad_seq}: {verdict.reason}",
    )  # fmt: skip


def _new_run(verdict: ChainVerdict) -> RunFinding:
    if not verdict.ok:
        return _broken(verdict, None)
    return RunFinding(verdict.run_id, "new", None, verdict.events, "started after the checkpoint")


def _finding(
    run_id: str, anchored: RunHead, verdict: ChainVerdict | None, log: AuditBackend
) -> RunFinding:
    if verdict is None:
        return RunFinding(
            run_id, "deleted", anchored.events, 0,
            f"the run had {anchored.events} event(s) at the checkpoint and is gone from the log",
        )  # fmt: skip
    if not verdict.ok:
        return _broken(verdict, anchored.events)
    if verdict.events < anchored.last_seq:
        return RunFinding(
            run_id, "truncated", anchored.events, verdict.events,
            f"{anchored.events} events at the checkpoint, {verdict.events} now: "
            f"seq {verdict.events + 1}..{anchored.last_seq} were removed",
        )  # fmt: skip
    at_seq = verdict.head if verdict.events == anchored.last_seq else \
        _hash_at(log, run_id, anchored.last_seq)  # fmt: skip
    if at_seq != anchored.head:
        return RunFinding(
            run_id, "rewritten", anchored.events, verdict.events,
            f"the event at seq {anchored.last_seq} is not the one checkpointed: history up to "
            f"seq {anchored.last_seq} was rewritten (or truncated and refilled)",
        )  # fmt: skip
    if verdict.events == anchored.last_seq:
        return RunFinding(run_id, "unchanged", anchored.events, verdict.events, "as checkpointed")
    return RunFinding(
        run_id, "appended", anchored.events, verdict.events,
        f"{verdict.events - anchored.last_seq} event(s) appended after the checkpoint",
    )  # fmt: skip


def verify_checkpoint(
    path: Path, log: AuditBackend, public_key: Ed25519PublicKey
) -> CheckpointReport:
    """Read and verify the checkpoint in `path`, then compare `log` with it."""
    return compare(read_checkpoint(path, public_key), log)


def summary_counts(report: CheckpointReport) -> Mapping[str, int]:
    """How many runs had each status: what a trace or a one-line summary records."""
    counts: dict[str, int] = {}
    for finding in report.findings:
        counts[finding.status] = counts.get(finding.status, 0) + 1
    return dict(sorted(counts.items()))
