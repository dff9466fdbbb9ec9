"""The audit chain itself: how one event is hashed onto the previous one, and a run's verdict.

`hash = H(prev_hash || canonical_json({run_id, seq, kind, ts, data, alg}))` with H = HMAC-SHA256
when a key is configured, SHA-256 otherwise. Pure: the log (governance.stores._audit) writes
with it, the verifier (governance.stores._audit_verify) re-hashes with it.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from governance.core._canonical import canonical_json

Alg = Literal["hmac-sha256", "sha256"]
ALGS: Final[tuple[Alg, ...]] = ("hmac-sha256", "sha256")
KEY_ENV: Final = "PROCTOR_AUDIT_KEY"

def genesis(alg: str) -> str:
    """The `prev_hash` of seq 1: fixed, so a chain cannot start anywhere else."""
    return f"{alg}:" + "0" * 64


def chain_hash(
    prev_hash: str,
    *,
    run_id: str,
    seq: int,
    kind: str,
    ts: str,
    data: Mapping[str, Any],
    alg: str,
    key: bytes | None,
) -> str:
    """The hash of one event, labelled with its algorithm (`sha256:<hex>`). Pure."""
    record = {"run_id": run_id, "seq": seq, "kind": kind, "ts": ts, "data": data, "alg": alg}
    message = prev_hash.encode("utf-8") + canonical_json(record)
    if alg == "hmac-sha256":
        if not key:
            raise ValueError("an hmac-sha256 chain needs its key")
        return f"{alg}:" + hmac.new(key, message, hashlib.sha256).hexdigest()
    if alg == "sha256":
        return f"{alg}:" + hashlib.sha256(message).hexdigest()
    raise ValueError(f"unknown audit alg {alg!r}")


@dataclass(frozen=True, slots=True)
class ChainVerdict:
    """The result of re-hashing one run's chain. `first_bad_seq` names where it first breaks."""

    run_id: str
    ok: bool
    events: int
    first_bad_seq: int | None
    reason: str | None
    head: str | None
    alg: str | None
