"""Signed checkpoints against a real SQLite log, tampered with raw SQL after the checkpoint.

Each kind of tampering the chain alone cannot see (tail truncation, a deleted run, a consistent
rewrite of an unkeyed chain, a truncate-and-refill) is made on the file, then named by
`verify_checkpoint`; what is legitimate (events appended, new runs) passes and is reported.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from governance.core._clock import ManualClock
from governance.stores import (
    AuditLog,
    CheckpointError,
    CheckpointOverwriteRefused,
    CheckpointReport,
    MemoryAuditLog,
    verify_checkpoint,
    write_checkpoint,
)

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
CLOCK = ManualClock()


def build(path: Path, key: bytes | None = None) -> Path:
    with AuditLog(path, key=key, clock=CLOCK) as log:
        for n in range(1, 6):
            log.append("run-a", "executed", {"tool": "fs.read", "n": n})
        for n in range(1, 3):
            log.append("run-b", "executed", {"tool": "fs.write", "n": n})
    return path


def checkpoint(db: Path, out: Path, key: bytes | None = None) -> Path:
    with AuditLog(db, key=key, clock=CLOCK) as log:
        write_checkpoint(log, out, private_key=KEY, clock=CLOCK)
    return out


def verify(db: Path, cp: Path, key: bytes | None = None) -> CheckpointReport:
    with AuditLog(db, key=key, readonly=True) as log:
        return verify_checkpoint(cp, log, KEY.public_key())


def sql(db: Path, *statements: str) -> None:
    with closing(sqlite3.connect(db)) as conn, conn:
        for statement in statements:
            conn.execute(statement)


def statuses(report: CheckpointReport) -> dict[str, str]:
    return {f.run_id: f.status for f in report.findings}


def rehash_run(db: Path, run_id: str, change_seq: int | None) -> None:
    """What a writer without a key does to an unkeyed chain: change history, re-hash it all."""
    with closing(sqlite3.connect(db)) as conn, conn:
        rows = conn.execute(
            "SELECT seq, kind, ts, data FROM audit_events WHERE run_id = ? ORDER BY seq", (run_id,)
        ).fetchall()
        prev = "sha256:" + "0" * 64
        for seq, kind, ts, data in rows:
            if seq == change_seq:
                data = json.dumps({"n": 99, "tool": "fs.delete"}, separators=(",", ":"))
            message = (
                f'{prev}{{"alg":"sha256","data":{data},"kind":{json.dumps(kind)},'
                f'"run_id":{json.dumps(run_id)},"seq":{seq},"ts":{json.dumps(ts)}}}'
            )
            digest = "sha256:" + hashlib.sha256(message.encode()).hexdigest()
            conn.execute(
                "UPDATE audit_events SET data = ?, prev_hash = ?, hash = ? "
                "WHERE run_id = ? AND seq = ?",
                (data, prev, digest, run_id, seq),
            )
            prev = digest


def test_an_untouched_log_verifies_against_its_checkpoint(tmp_path: Path) -> None:
    db = build(tmp_path / "a.db")
    report = verify(db, checkpoint(db, tmp_path / "cp.json"))
    assert report.ok
    assert statuses(report) == {"run-a": "unchanged", "run-b": "unchanged"}


def test_events_appended_and_runs_started_after_the_checkpoint_are_fine_and_reported(
    tmp_path: Path,
) -> None:
    db = build(tmp_path / "a.db")
    cp = checkpoint(db, tmp_path / "cp.json")
    with AuditLog(db, clock=CLOCK) as log:
        log.append("run-a", "executed", {"n": 6})
        log.append("run-c", "proposed", {"n": 1})
    report = verify(db, cp)
    assert report.ok
    assert statuses(report) == {"run-a": "appended", "run-b": "unchanged", "run-c": "new"}
    appended = next(f for f in report.findings if f.run_id == "run-a")
    assert (appended.checkpoint_events, appended.log_events) == (5, 6)


def test_a_truncated_tail_is_detected_although_the_chain_still_verifies(tmp_path: Path) -> None:
    db = build(tmp_path / "a.db")
    cp = checkpoint(db, tmp_path / "cp.json")
    sql(db, "DELETE FROM audit_events WHERE run_id = 'run-a' AND seq > 3")
    with AuditLog(db, readonly=True) as log:
        assert log.verify("run-a").ok  # the chain alone cannot tell
    report = verify(db, cp)
    assert not report.ok
    assert statuses(report) == {"run-a": "truncated", "run-b": "unchanged"}
    truncated = next(f for f in report.findings if f.run_id == "run-a")
    assert "seq 4..5" in truncated.detail


def test_a_deleted_run_is_detected(tmp_path: Path) -> None:
    db = build(tmp_path / "a.db")
    cp = checkpoint(db, tmp_path / "cp.json")
    sql(db, "DELETE FROM audit_events WHERE run_id = 'run-b'")
    report = verify(db, cp)
    assert not report.ok
    assert statuses(report) == {"run-a": "unchanged", "run-b": "deleted"}


def test_history_rewritten_and_re_hashed_before_the_checkpointed_seq_is_detected(
    tmp_path: Path,
) -> None:
    db = build(tmp_path / "a.db")
    cp = checkpoint(db, tmp_path / "cp.json")
    rehash_run(db, "run-a", change_seq=2)
    with AuditLog(db, readonly=True) as log:
        assert log.verify("run-a").ok  # an unkeyed chain re-hashed: the known limit
    report = verify(db, cp)
    assert statuses(report) == {"run-a": "rewritten", "run-b": "unchanged"}
    assert not report.ok


def test_a_rewrite_behind_appended_events_is_detected_at_the_checkpointed_seq(
    tmp_path: Path,
) -> None:
    db = build(tmp_path / "a.db")
    cp = checkpoint(db, tmp_path / "cp.json")
    with AuditLog(db, clock=CLOCK) as log:
        for n in (6, 7):
            log.append("run-a", "executed", {"n": n})
    rehash_run(db, "run-a", change_seq=1)  # the log is longer than checkpointed, and rewritten
    assert statuses(verify(db, cp))["run-a"] == "rewritten"


def test_a_truncated_run_refilled_to_its_old_length_is_detected(tmp_path: Path) -> None:
    db = build(tmp_path / "a.db")
    cp = checkpoint(db, tmp_path / "cp.json")
    sql(db, "DELETE FROM audit_events WHERE run_id = 'run-a' AND seq > 2")
    with AuditLog(db, clock=CLOCK) as log:  # the writer fills the run back up with new events
        for n in range(3, 6):
            log.append("run-a", "executed", {"tool": "fs.read", "n": n, "forged": True})
    report = verify(db, cp)
    assert statuses(report)["run-a"] == "rewritten"


def test_a_row_edited_in_place_shows_as_a_broken_chain(tmp_path: Path) -> None:
    db = build(tmp_path / "a.db")
    cp = checkpoint(db, tmp_path / "cp.json")
    sql(db, "UPDATE audit_events SET data = '{\"n\":1,\"tool\":\"fs.delete\"}' "
            "WHERE run_id = 'run-b' AND seq = 1")  # fmt: skip
    report = verify(db, cp)
    assert statuses(report)["run-b"] == "broken"
    assert not report.ok


def test_a_keyed_log_rewritten_without_the_key_fails_against_the_checkpoint(
    tmp_path: Path,
) -> None:
    db = build(tmp_path / "a.db", key=b"audit-key")
    cp = checkpoint(db, tmp_path / "cp.json", key=b"audit-key")
    rehash_run(db, "run-b", change_seq=1)  # a downgrade to a consistent sha256 chain
    report = verify(db, cp, key=b"audit-key")
    assert statuses(report) == {"run-a": "unchanged", "run-b": "broken"}


def test_a_checkpoint_of_another_log_is_named_as_such(tmp_path: Path) -> None:
    first = build(tmp_path / "a.db")
    second = build(tmp_path / "b.db")  # same runs, same events, another log
    cp = checkpoint(first, tmp_path / "cp.json")
    checkpoint(second, tmp_path / "cp-b.json")  # b.db gets an identity of its own
    report = verify(second, cp)
    assert not report.ok
    assert report.problem is not None and "another log" in report.problem
    assert report.findings == []


def test_a_log_whose_identity_was_removed_fails_against_its_checkpoint(tmp_path: Path) -> None:
    db = build(tmp_path / "a.db")
    cp = checkpoint(db, tmp_path / "cp.json")
    sql(db, "DROP TABLE audit_log_identity")
    report = verify(db, cp)
    assert not report.ok and report.problem is not None
    assert "no identity" in report.problem


def test_a_log_emptied_of_every_run_fails_against_its_checkpoint(tmp_path: Path) -> None:
    db = build(tmp_path / "a.db")
    cp = checkpoint(db, tmp_path / "cp.json")
    sql(db, "DELETE FROM audit_events")
    assert statuses(verify(db, cp)) == {"run-a": "deleted", "run-b": "deleted"}


def test_no_checkpoint_is_signed_over_a_broken_chain(tmp_path: Path) -> None:
    db = build(tmp_path / "a.db")
    sql(db, "DELETE FROM audit_events WHERE run_id = 'run-a' AND seq = 2")
    out = tmp_path / "cp.json"
    with AuditLog(db, clock=CLOCK) as log, pytest.raises(CheckpointError, match="run-a"):
        write_checkpoint(log, out, private_key=KEY, clock=CLOCK)
    assert not out.exists()


def test_the_checkpoint_records_heads_counts_runs_identity_time_and_version(
    tmp_path: Path,
) -> None:
    db = build(tmp_path / "a.db")
    with AuditLog(db, clock=CLOCK) as log:
        body = write_checkpoint(log, tmp_path / "cp.json", private_key=KEY, clock=CLOCK)
        heads = {run: log.head(run) for run in ("run-a", "run-b")}
    assert body.format == "proctor-audit-checkpoint" and body.format_version == 1
    assert body.created_at == "2026-01-01T00:00:00.000000Z"
    assert body.log_id.startswith("log-") and body.run_count == 2
    assert {run: (h.head, h.events, h.last_seq) for run, h in body.runs.items()} == {
        "run-a": (heads["run-a"], 5, 5),
        "run-b": (heads["run-b"], 2, 2),
    }


def test_a_memory_log_is_checkpointed_and_verified_the_same_way(tmp_path: Path) -> None:
    log = MemoryAuditLog(clock=CLOCK)
    log.append("r", "executed", {"n": 1})
    cp = tmp_path / "cp.json"
    write_checkpoint(log, cp, private_key=KEY, clock=CLOCK)
    log.append("r", "executed", {"n": 2})
    report = verify_checkpoint(cp, log, KEY.public_key())
    assert report.ok and statuses(report) == {"r": "appended"}
    other = MemoryAuditLog(clock=CLOCK)
    other.append("r", "executed", {"n": 1})
    assert verify_checkpoint(cp, other, KEY.public_key()).problem is not None


# -- a new checkpoint never signs over the evidence of the old one ----------------------------


def test_a_new_checkpoint_refuses_to_replace_one_the_log_no_longer_matches(tmp_path: Path) -> None:
    db, cp = build(tmp_path / "audit.sqlite"), tmp_path / "audit.checkpoint.json"
    checkpoint(db, cp)
    anchored = cp.read_bytes()
    sql(db, "DELETE FROM audit_events WHERE run_id = 'run-a' AND seq > 3")
    with pytest.raises(CheckpointOverwriteRefused, match=r"run-a: truncated"):
        checkpoint(db, cp)
    assert cp.read_bytes() == anchored  # the evidence is still there...
    assert statuses(verify(db, cp))["run-a"] == "truncated"  # ...and still says what happened


def test_a_new_checkpoint_replaces_one_the_log_still_matches(tmp_path: Path) -> None:
    db, cp = build(tmp_path / "audit.sqlite"), tmp_path / "audit.checkpoint.json"
    checkpoint(db, cp)
    with AuditLog(db, clock=CLOCK) as log:
        log.append("run-a", "executed", {"tool": "fs.read", "n": 6})
    checkpoint(db, cp)  # appended events are fine: the new checkpoint anchors them too
    sql(db, "DELETE FROM audit_events WHERE run_id = 'run-a' AND seq = 6")
    assert statuses(verify(db, cp))["run-a"] == "truncated"


@pytest.mark.parametrize("damage", ["garbage", "other-key", "deleted-run"])
def test_an_unverifiable_or_damaged_anchor_is_kept_unless_the_operator_forces(
    tmp_path: Path, damage: str
) -> None:
    db, cp = build(tmp_path / "audit.sqlite"), tmp_path / "audit.checkpoint.json"
    if damage == "garbage":
        cp.write_bytes(b'{"truncated": ')
    elif damage == "other-key":
        with AuditLog(db, clock=CLOCK) as log:
            other = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
            write_checkpoint(log, cp, private_key=other, clock=CLOCK)
    else:
        checkpoint(db, cp)
        sql(db, "DELETE FROM audit_events WHERE run_id = 'run-b'")
    before = cp.read_bytes()
    with pytest.raises(CheckpointOverwriteRefused):
        checkpoint(db, cp)
    assert cp.read_bytes() == before
    with AuditLog(db, clock=CLOCK) as log:
        write_checkpoint(log, cp, private_key=KEY, clock=CLOCK, replace_unverified=True)
    assert verify(db, cp).ok  # forced: the current state is anchored, deliberately
