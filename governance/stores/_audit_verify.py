"""Streaming verification of the audit chain: hash the stored bytes, never re-encode them.

`append` stores `data` as canonical JSON, and the chain hashes exactly that text inside the
canonical record `{"alg":..,"data":<stored text>,"kind":..,"run_id":..,"seq":..,"ts":..}`. So
the verifier rebuilds the record around the stored text (no JSON parse, no re-serialisation)
and hashes it. This is stricter than decoding and re-encoding: a stored text re-written to an
equivalent form (whitespace, escapes, a duplicate key that a first-wins reader would see) no
longer hashes right. Only a failing row pays for the slow diagnosis that names the reason.

Rows are consumed one at a time, so a run of any length is verified in constant memory.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from json.encoder import encode_basestring as quote  # json.dumps(str, ensure_ascii=False)
from typing import Any

from governance.stores._audit_chain import ALGS, KEY_ENV, ChainVerdict, chain_hash, genesis

Row = Sequence[Any]  # (run_id, seq, kind, ts, data, alg, prev_hash, hash)
_NO_EVENTS = "no events recorded for this run"


def _hmac_pads(alg: Any, key: bytes | None) -> tuple[Any, Any] | None:
    """The inner and outer SHA-256 states of HMAC-SHA256 under `key`, hashed once per chain:
    each row then costs two copies and updates, all in C (half of `hmac.digest`)."""
    if alg != "hmac-sha256" or not key:
        return None
    block = (hashlib.sha256(key).digest() if len(key) > 64 else key).ljust(64, b"\0")
    inner = hashlib.sha256(bytes(b ^ 0x36 for b in block))
    return inner, hashlib.sha256(bytes(b ^ 0x5C for b in block))


def verify_stream(run_id: str, rows: Iterable[Row], key: bytes | None) -> ChainVerdict:
    """Check one run's rows, in seq order; `events` counts every row, even past a break."""
    it: Iterator[Row] = iter(rows)
    first = next(it, None)
    if first is None:
        return ChainVerdict(run_id, False, 0, None, _NO_EVENTS, None, None)
    first_alg = first[5]
    prev = genesis(str(first_alg))
    pads = _hmac_pads(first_alg, key)
    if pads is None and (first_alg != "sha256" or key):  # an alg this key cannot check
        bad_seq, reason = _diagnose(run_id, first, 1, prev, first_alg, key)
        return ChainVerdict(run_id, False, 1 + sum(1 for _ in it), bad_seq, reason, None, first_alg)
    inner: Any = pads[0] if pads else None
    outer: Any = pads[1] if pads else None
    label = f"{first_alg}:"
    head = f'{{"alg":{quote(first_alg)},"data":'
    middle = f',"run_id":{quote(run_id)},"seq":'
    sha256, compare = hashlib.sha256, hmac.compare_digest
    n = 0
    for row in chain((first,), it):
        n += 1
        _, seq, kind, ts, data, alg, prev_hash, stored = row
        try:
            if (
                seq == n
                and seq.__class__ is int
                and alg == first_alg
                and prev_hash == prev
                and data.__class__ is str
            ):
                message = f'{prev}{head}{data},"kind":{quote(kind)}{middle}{seq},"ts":{quote(ts)}}}'
                if inner is None:
                    hexdigest = sha256(message.encode()).hexdigest()
                else:
                    i, o = inner.copy(), outer.copy()
                    i.update(message.encode())
                    o.update(i.digest())
                    hexdigest = o.hexdigest()
                if compare(label + hexdigest, stored):
                    prev = stored
                    continue
        except (TypeError, ValueError):  # a column of the wrong type, or text UTF-8 cannot hold
            pass
        bad_seq, reason = _diagnose(run_id, row, n, prev, first_alg, key)
        events = n + sum(1 for _ in it)
        return ChainVerdict(run_id, False, events, bad_seq, reason, None, first_alg)
    return ChainVerdict(run_id, True, n, None, None, prev, first_alg)


def _diagnose(
    run_id: str, row: Row, expected: int, prev: str, first_alg: Any, key: bytes | None
) -> tuple[int, str]:
    """Why a row failed the fast check: the first rule it breaks, in a fixed order."""
    _, seq, kind, ts, data, alg, prev_hash, stored = row
    if not isinstance(seq, int) or seq != expected:
        return expected, f"seq gap: expected {expected}, found {seq!r}"
    if alg not in ALGS:
        return seq, f"unknown alg {alg!r}"
    if alg != first_alg:
        return seq, f"alg changed: {first_alg} at seq 1, {alg} at seq {seq}"
    if seq == 1 and alg == "hmac-sha256" and not key:
        return 1, f"key missing: the chain is keyed (hmac-sha256); set {KEY_ENV} to verify it"
    if seq == 1 and alg == "sha256" and key:
        return 1, (
            "unkeyed chain where a key is configured: sha256 events cannot prove they were "
            "written by a key holder (a rewrite would look like this)"
        )
    if prev_hash != prev:
        target = "the genesis value" if seq == 1 else f"seq {seq - 1}"
        return seq, f"prev_hash does not link to {target}"
    if not all(isinstance(field, str) for field in (kind, ts, data, stored)):
        return seq, "malformed row: a text column holds another type"
    try:
        parsed = json.loads(data)
    except ValueError:
        return seq, "data is not valid JSON"
    if not isinstance(parsed, dict):
        return seq, "data is not a JSON object"
    try:
        decoded_hash = chain_hash(
            prev_hash, run_id=run_id, seq=seq, kind=kind, ts=ts, data=parsed, alg=alg, key=key
        )
    except ValueError as exc:
        return seq, f"data cannot be re-hashed: {exc}"
    if hmac.compare_digest(decoded_hash.encode(), stored.encode()):
        # The decoded value hashes right, the stored text does not: it was re-encoded.
        return seq, "hash mismatch: data is not the canonical text that was hashed (re-encoded)"
    if seq == 1 and alg == "hmac-sha256":
        return 1, "hash mismatch: wrong key (or the first event was modified)"
    return seq, "hash mismatch"
