"""The append path hashes plain records without encoding them twice; the chain is the same.

`verify` re-hashes every row with `chain_hash`, so any difference between the two encodings
shows up as a broken chain, and the direct comparisons below name the record that differs.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from governance import ManualClock
from governance.stores._audit import AuditLog, _plain, _prepare, _record_json, _seal
from governance.stores._audit_chain import chain_hash
from tests.store_backends import Backend

KEY = b"k" * 32


def _payloads(seed: int, count: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    scalars: list[Any] = [
        "plain", "é ü \u2028 \u0000 \"q\" \\", "sha256:" + "ab" * 32, 0, -7, 2**70, 1.5, -0.0,
        1e-310, True, False, None, "token=ghp_FakeGitHubToken0123456789abcdefABCD",
    ]  # fmt: skip

    def value(depth: int) -> Any:
        roll = rng.random()
        if depth < 3 and roll < 0.2:
            return {rng.choice(["a", "b", "Zed", "ü", "api_key", "n"]): value(depth + 1)}
        if depth < 3 and roll < 0.3:
            return [value(depth + 1) for _ in range(rng.randint(0, 3))]
        return rng.choice(scalars)

    return [
        {f"k{i}{rng.choice('xyZ')}": value(0) for i in range(rng.randint(1, 6))}
        for _ in range(count)
    ]


@pytest.mark.parametrize(("alg", "key"), [("sha256", None), ("hmac-sha256", KEY)])
def test_a_plain_record_hashes_exactly_as_chain_hash_does(alg: str, key: bytes | None) -> None:
    for n, data in enumerate(_payloads(21, 2000)):
        kind, stored, clean, plain = _prepare("tool.requested", data)
        assert plain
        ts = f"2026-12-01T00:00:{n % 60:02d}.000000Z"
        expected = chain_hash(
            "sha256:" + "0" * 64, run_id="run-é", seq=n + 1, kind=kind, ts=ts, data=clean,
            alg=alg, key=key,
        )  # fmt: skip
        message = _record_json("run-é", n + 1, kind, ts, stored, alg)
        assert _seal("sha256:" + "0" * 64, message, alg, key) == expected, data


def test_data_that_would_not_read_back_as_itself_takes_the_parsed_path() -> None:
    for data in ({"n": {9: "a", 10: "b"}}, {"n": {None: 1}}):
        assert not _plain(data)
        _, stored, clean, plain = _prepare("note", data)
        assert not plain
        assert isinstance(clean, dict)


def test_records_with_keys_that_are_not_text_still_verify(backend: Backend) -> None:
    with backend.open(AuditLog, key=KEY, clock=ManualClock()) as audit:
        audit.append("run-1", "note", {"counts": {9: "nine", 10: "ten"}, "pair": (1, 2)})
        audit.append("run-1", "note", {"plain": "yes", "n": 1.25})
        verdict = audit.verify("run-1")
        assert verdict.ok, verdict.reason
        assert audit.events("run-1")[0].data == {
            "counts": {"10": "ten", "9": "nine"},
            "pair": [1, 2],
        }


def test_the_event_handed_back_equals_the_event_read_back(backend: Backend) -> None:
    with backend.open(AuditLog, clock=ManualClock()) as audit:
        written = [audit.append("run-1", "note", data) for data in _payloads(22, 200)]
        assert audit.events("run-1") == written
        assert audit.verify("run-1").ok
