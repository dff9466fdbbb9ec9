"""Pinned KNOWN LIMITS of the audit chain, so nobody mistakes them for guarantees.

1. Without a key, anyone who can write the file can rewrite a chain from genesis and it verifies
   (the verifier authenticates the stored bytes, so such a writer can store any bytes at all).
2. Deleting the newest events (tail truncation) leaves a chain that verifies. Only an anchor
   held outside the database (a published head, or an HMAC key kept elsewhere) closes these.
If one of the "limit" tests starts failing, the limit was fixed: update DESIGN.md and this file.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from governance.core._errors import GovernanceError
from governance.stores._audit import AuditLog

KEY = b"limits-test-key"


def build(path: Path, key: bytes | None, events: int = 5) -> None:
    with AuditLog(path, key=key) as log:
        for n in range(1, events + 1):
            log.append("r", "executed", {"tool": "fs.read", "n": n})


def rewrite_from_genesis(path: Path, alg: str, key: bytes | None) -> None:
    """What an attacker with write access does: change history, then recompute every hash."""
    with closing(sqlite3.connect(path)) as conn, conn:
        rows = conn.execute(
            "SELECT run_id, seq, kind, ts, data FROM audit_events WHERE run_id = 'r' ORDER BY seq"
        ).fetchall()
        prev = alg + ":" + "0" * 64
        for run_id, seq, kind, ts, data in rows:
            new_data = json.loads(data)
            if seq == 2:
                new_data["tool"] = "fs.delete"  # the history the attacker wants
            record = {"run_id": run_id, "seq": seq, "kind": kind, "ts": ts,
                      "data": new_data, "alg": alg}  # fmt: skip
            message = prev.encode() + json.dumps(
                record, sort_keys=True, separators=(",", ":"), ensure_ascii=False
            ).encode()
            if key:
                digest = hmac.new(key, message, hashlib.sha256).hexdigest()
            else:
                digest = hashlib.sha256(message).hexdigest()
            new_hash = f"{alg}:{digest}"
            conn.execute(
                "UPDATE audit_events SET data = ?, alg = ?, prev_hash = ?, hash = ? "
                "WHERE run_id = ? AND seq = ?",
                (json.dumps(new_data, sort_keys=True, separators=(",", ":")), alg, prev, new_hash,
                 run_id, seq),
            )  # fmt: skip
            prev = new_hash


def test_known_limit_an_unkeyed_chain_rewritten_from_genesis_still_verifies(
    tmp_path: Path,
) -> None:
    db = tmp_path / "a.db"
    build(db, None)
    rewrite_from_genesis(db, "sha256", None)
    with AuditLog(db) as log:
        assert log.events("r")[1].data["tool"] == "fs.delete"  # history changed...
        assert log.verify("r").ok  # ...and the verifier cannot tell: this is the limit.


def test_the_same_rewrite_of_an_hmac_chain_without_the_key_is_detected_at_seq_1(
    tmp_path: Path,
) -> None:
    db = tmp_path / "a.db"
    build(db, KEY)
    rewrite_from_genesis(db, "hmac-sha256", b"attacker-guess")
    with AuditLog(db, key=KEY) as log:
        verdict = log.verify("r")
    assert (verdict.ok, verdict.first_bad_seq) == (False, 1)


def test_rewriting_an_hmac_chain_as_an_unkeyed_one_is_detected_by_a_verifier_with_the_key(
    tmp_path: Path,
) -> None:
    db = tmp_path / "a.db"
    build(db, KEY)
    rewrite_from_genesis(db, "sha256", None)  # a downgrade: a consistent sha256 chain
    with AuditLog(db, key=KEY) as log:
        verdict = log.verify("r")
    assert (verdict.ok, verdict.first_bad_seq) == (False, 1)
    assert verdict.reason is not None and "key is configured" in verdict.reason


def test_known_limit_an_unkeyed_writer_who_re_hashes_can_store_bytes_that_are_not_json(
    tmp_path: Path,
) -> None:
    """The verifier hashes the stored text as it is (it never re-encodes it), so without a key a
    re-hashed row proves nothing about its bytes; `events()` (and `audit show`) refuse them."""
    db = tmp_path / "a.db"
    build(db, None)
    with closing(sqlite3.connect(db)) as conn, conn:
        rows = conn.execute(
            "SELECT seq, kind, ts, data FROM audit_events WHERE run_id = 'r' ORDER BY seq"
        ).fetchall()
        prev = "sha256:" + "0" * 64
        for seq, kind, ts, data in rows:
            text = "not json" if seq == 2 else data
            message = (
                f'{prev}{{"alg":"sha256","data":{text},"kind":{json.dumps(kind)},'
                f'"run_id":"r","seq":{seq},"ts":{json.dumps(ts)}}}'
            )
            new_hash = "sha256:" + hashlib.sha256(message.encode()).hexdigest()
            conn.execute(
                "UPDATE audit_events SET data = ?, prev_hash = ?, hash = ? "
                "WHERE run_id = 'r' AND seq = ?",
                (text, prev, new_hash, seq),
            )
            prev = new_hash
    with AuditLog(db) as log:
        assert log.verify("r").ok  # the limit...
        with pytest.raises(GovernanceError, match="malformed data"):
            log.events("r")  # ...and the reader that still refuses the row


def test_known_limit_truncating_the_tail_still_verifies(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    build(db, KEY)
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM audit_events WHERE run_id = 'r' AND seq > 3")
    with AuditLog(db, key=KEY) as log:
        verdict = log.verify("r")
    assert verdict.ok and verdict.events == 3  # two events are gone and nothing says so


def test_an_external_anchor_of_the_head_is_what_detects_tail_truncation(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    build(db, None)
    with AuditLog(db) as log:
        anchored = log.head("r")  # published somewhere the database's writer cannot reach
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM audit_events WHERE run_id = 'r' AND seq = 5")
    with AuditLog(db) as log:
        verdict = log.verify("r")
    assert verdict.ok
    assert verdict.head != anchored
