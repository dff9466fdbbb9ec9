"""The tamper matrix: rows edited with raw SQL are detected at the right seq, with a reason."""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

from governance.core._clock import ManualClock
from governance.stores._audit import AuditLog
from governance.stores._audit_chain import ChainVerdict

KEY = b"tamper-test-key"
KEYS = [pytest.param(None, id="unkeyed"), pytest.param(KEY, id="hmac")]


@contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    """A second, hostile writer with plain sqlite3 access to the file."""
    with closing(sqlite3.connect(path)) as conn, conn:
        yield conn


def build(path: Path, key: bytes | None) -> None:
    clock = ManualClock()
    with AuditLog(path, key=key, clock=clock) as log:
        for n in range(1, 6):
            log.append("r1", f"step{n}", {"n": n, "tool": "fs.read"})
            log.append("r2", "other", {"n": n})
            clock.advance(1)


def verify(path: Path, key: bytes | None, run_id: str = "r1") -> ChainVerdict:
    with AuditLog(path, key=key) as log:
        return log.verify(run_id)


def row(path: Path, seq: int, run_id: str = "r1") -> tuple[Any, ...]:
    with raw(path) as conn:
        found: tuple[Any, ...] = conn.execute(
            "SELECT * FROM audit_events WHERE run_id = ? AND seq = ?", (run_id, seq)
        ).fetchone()
    return found


def assert_broken_at(verdict: ChainVerdict, seq: int, reason: str) -> None:
    assert not verdict.ok
    assert verdict.first_bad_seq == seq, verdict
    assert verdict.reason is not None and reason in verdict.reason, verdict
    assert verdict.head is None


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("UPDATE audit_events SET kind = 'forged' WHERE {where}", "hash mismatch"),
        ("UPDATE audit_events SET ts = '2020-01-01T00:00:00.000000Z' WHERE {where}",
         "hash mismatch"),
        ("""UPDATE audit_events SET data = '{{"n":3,"tool":"fs.delete"}}' WHERE {where}""",
         "hash mismatch"),
        ("UPDATE audit_events SET data = 'not json' WHERE {where}", "data is not valid JSON"),
        ("UPDATE audit_events SET data = '[1,2]' WHERE {where}", "data is not a JSON object"),
        ("UPDATE audit_events SET alg = CASE alg WHEN 'sha256' THEN 'hmac-sha256' "
         "ELSE 'sha256' END WHERE {where}", "alg changed"),
        ("UPDATE audit_events SET alg = 'md5' WHERE {where}", "unknown alg"),
        ("UPDATE audit_events SET prev_hash = substr(prev_hash, 1, length(prev_hash) - 1) || 'x' "
         "WHERE {where}", "prev_hash does not link to seq 2"),
        ("UPDATE audit_events SET hash = substr(hash, 1, length(hash) - 1) || 'x' WHERE {where}",
         "hash mismatch"),
        ("UPDATE audit_events SET run_id = 'elsewhere' WHERE {where}",
         "seq gap: expected 3, found 4"),
        ("DELETE FROM audit_events WHERE {where}", "seq gap: expected 3, found 4"),
    ],  # fmt: skip
    ids=["kind", "ts", "data", "data-invalid", "data-not-object", "alg", "alg-unknown",
         "prev_hash", "hash", "run_id", "delete"],  # fmt: skip
)
def test_editing_a_middle_row_is_detected_at_its_seq(
    tmp_path: Path, key: bytes | None, sql: str, reason: str
) -> None:
    db = tmp_path / "a.db"
    build(db, key)
    with raw(db) as conn:
        changed = conn.execute(sql.format(where="run_id = 'r1' AND seq = 3")).rowcount
    assert changed == 1
    assert_broken_at(verify(db, key), 3, reason)
    assert verify(db, key, "r2").ok, "tampering with one run must not implicate another"


@pytest.mark.parametrize("key", KEYS)
def test_swapping_two_rows_seq_is_detected_at_the_lower_one(
    tmp_path: Path, key: bytes | None
) -> None:
    db = tmp_path / "a.db"
    build(db, key)
    with raw(db) as conn:
        conn.execute("UPDATE audit_events SET seq = -2 WHERE run_id = 'r1' AND seq = 2")
        conn.execute("UPDATE audit_events SET seq = 2 WHERE run_id = 'r1' AND seq = 4")
        conn.execute("UPDATE audit_events SET seq = 4 WHERE run_id = 'r1' AND seq = -2")
    assert_broken_at(verify(db, key), 2, "prev_hash does not link to seq 1")


@pytest.mark.parametrize("key", KEYS)
def test_editing_two_rows_reports_only_the_first(tmp_path: Path, key: bytes | None) -> None:
    db = tmp_path / "a.db"
    build(db, key)
    with raw(db) as conn:
        conn.execute("UPDATE audit_events SET kind = 'x' WHERE run_id = 'r1' AND seq IN (2, 4)")
    assert_broken_at(verify(db, key), 2, "hash mismatch")


@pytest.mark.parametrize("key", KEYS)
def test_editing_the_first_or_last_row_is_detected_there(
    tmp_path: Path, key: bytes | None
) -> None:
    db = tmp_path / "a.db"
    build(db, key)
    with raw(db) as conn:
        conn.execute("UPDATE audit_events SET data = '{}' WHERE run_id = 'r1' AND seq = 5")
    assert_broken_at(verify(db, key), 5, "hash mismatch")
    with raw(db) as conn:
        conn.execute("UPDATE audit_events SET prev_hash = 'x' WHERE run_id = 'r1' AND seq = 1")
    assert_broken_at(verify(db, key), 1, "prev_hash does not link to the genesis value")


def _shift_up_from(conn: sqlite3.Connection, seq: int) -> None:
    # Through negative values: SQLite checks the primary key row by row.
    conn.execute(
        "UPDATE audit_events SET seq = -(seq + 1) WHERE run_id = 'r1' AND seq >= ?", (seq,)
    )
    conn.execute("UPDATE audit_events SET seq = -seq WHERE run_id = 'r1' AND seq < 0")


@pytest.mark.parametrize("key", KEYS)
def test_a_forged_row_inserted_in_the_middle_is_detected_at_its_seq(
    tmp_path: Path, key: bytes | None
) -> None:
    db = tmp_path / "a.db"
    build(db, key)
    _, _, _, ts, _, alg, _, prev = row(db, 2)
    with raw(db) as conn:
        _shift_up_from(conn, 3)
        conn.execute(
            "INSERT INTO audit_events VALUES ('r1', 3, 'executed', ?, '{}', ?, ?, ?)",
            (ts, alg, prev, alg + ":" + "ab" * 32),
        )
    assert_broken_at(verify(db, key), 3, "hash mismatch")


@pytest.mark.parametrize("key", KEYS)
def test_a_well_formed_forged_row_is_still_detected_where_the_chain_resumes(
    tmp_path: Path, key: bytes | None
) -> None:
    """The forger hashes the row properly (with a guessed key): the next row no longer links."""
    db = tmp_path / "a.db"
    build(db, key)
    _, _, _, ts, _, alg, _, prev = row(db, 2)
    record = {"run_id": "r1", "seq": 3, "kind": "executed", "ts": ts, "data": {}, "alg": alg}
    message = prev.encode() + json.dumps(record, sort_keys=True, separators=(",", ":")).encode()
    forged = (
        alg + ":" + hmac.new(b"guessed-key", message, hashlib.sha256).hexdigest()
        if key
        else alg + ":" + hashlib.sha256(message).hexdigest()
    )
    with raw(db) as conn:
        _shift_up_from(conn, 3)
        conn.execute(
            "INSERT INTO audit_events VALUES ('r1', 3, 'executed', ?, '{}', ?, ?, ?)",
            (ts, alg, prev, forged),
        )
    if key:
        assert_broken_at(verify(db, key), 3, "hash mismatch")
    else:
        assert_broken_at(verify(db, key), 4, "prev_hash does not link to seq 3")


def test_verify_all_names_only_the_broken_run(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    build(db, None)
    with raw(db) as conn:
        conn.execute("DELETE FROM audit_events WHERE run_id = 'r2' AND seq = 1")
    with AuditLog(db) as log:
        verdicts = {v.run_id: v for v in log.verify_all()}
    assert verdicts["r1"].ok
    assert_broken_at(verdicts["r2"], 1, "seq gap: expected 1, found 2")
