"""The audit chain as written: seq, genesis, the documented hash formula, keys, redaction."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from governance.core._canonical import keyed_digest
from governance.core._clock import ManualClock
from governance.core._errors import AuditWriteError
from governance.stores._audit import AuditLog
from governance.stores._audit_chain import genesis
from tests.store_backends import Backend

KEY = b"test-audit-key"


def spec_hash(prev_hash: str, record: dict[str, Any], key: bytes | None) -> str:
    """The formula as documented, written independently of the module under test."""
    message = prev_hash.encode() + json.dumps(
        record, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")
    if key:
        return "hmac-sha256:" + hmac.new(key, message, hashlib.sha256).hexdigest()
    return "sha256:" + hashlib.sha256(message).hexdigest()


def raw_rows(path: Path) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT * FROM audit_events ORDER BY run_id, seq").fetchall()


@pytest.mark.parametrize(("key", "alg"), [(None, "sha256"), (KEY, "hmac-sha256")])
def test_stored_hashes_follow_the_documented_formula_from_genesis(
    tmp_path: Path, key: bytes | None, alg: str
) -> None:
    clock = ManualClock()
    with AuditLog(tmp_path / "a.db", key=key, clock=clock) as log:
        log.append("r1", "proposed", {"tool": "fs.read", "n": 1})
        clock.advance(1.5)
        log.append("r1", "executed", {"ok": True})
    rows = raw_rows(tmp_path / "a.db")
    prev = alg + ":" + "0" * 64
    assert genesis(alg) == prev
    for expected_seq, (run_id, seq, kind, ts, data, row_alg, prev_hash, stored) in enumerate(
        rows, start=1
    ):
        assert (seq, row_alg, prev_hash) == (expected_seq, alg, prev)
        record = {"run_id": run_id, "seq": seq, "kind": kind, "ts": ts,
                  "data": json.loads(data), "alg": row_alg}  # fmt: skip
        assert stored == spec_hash(prev_hash, record, key)
        prev = stored


def test_seq_is_per_run_gap_free_and_starts_at_1(backend: Backend) -> None:
    with backend.open(AuditLog) as log:
        seqs = [(run, log.append(run, "k", {}).seq) for run in ["a", "b", "a", "a", "b"]]
        assert seqs == [("a", 1), ("b", 1), ("a", 2), ("a", 3), ("b", 2)]
        assert log.run_ids() == ["a", "b"]
        assert [e.seq for e in log.events("a")] == [1, 2, 3]
        assert log.head("a") == log.events("a")[-1].hash
        assert log.head("missing") is None
        assert log.events("missing") == []


def test_timestamps_come_from_the_injected_clock_as_utc(backend: Backend) -> None:
    plus_two = dt.timezone(dt.timedelta(hours=2))
    clock = ManualClock(dt.datetime(2026, 3, 4, 12, 0, 0, tzinfo=plus_two))
    with backend.open(AuditLog, clock=clock) as log:
        first = log.append("r", "k", {})
        clock.advance(0.25)
        second = log.append("r", "k", {})
    assert first.ts == "2026-03-04T10:00:00.000000Z"
    assert second.ts == "2026-03-04T10:00:00.250000Z"


def test_a_reopened_log_continues_the_same_chain(tmp_path: Path) -> None:
    with AuditLog(tmp_path / "a.db", key=KEY) as log:
        first = log.append("r", "k", {"n": 1})
    with AuditLog(tmp_path / "a.db", key=KEY) as log:
        second = log.append("r", "k", {"n": 2})
        assert (second.seq, second.prev_hash) == (2, first.hash)
        assert log.verify("r").ok


def test_verify_of_an_honest_chain_is_ok_and_reports_head_and_alg(backend: Backend) -> None:
    with backend.open(AuditLog, key=KEY) as log:
        for n in range(5):
            last = log.append("r", "step", {"n": n})
        verdict = log.verify("r")
    assert verdict.ok and verdict.first_bad_seq is None and verdict.reason is None
    assert (verdict.events, verdict.head, verdict.alg) == (5, last.hash, "hmac-sha256")


def test_verify_of_a_run_with_no_events_is_not_ok(backend: Backend) -> None:
    with backend.open(AuditLog) as log:
        verdict = log.verify("never-written")
    assert not verdict.ok and verdict.events == 0 and verdict.reason is not None


def test_verifying_a_keyed_chain_without_the_key_fails_at_seq_1_naming_the_key(
    tmp_path: Path,
) -> None:
    with AuditLog(tmp_path / "a.db", key=KEY) as log:
        log.append("r", "k", {})
        log.append("r", "k", {})
    with AuditLog(tmp_path / "a.db") as log:
        verdict = log.verify("r")
    assert (verdict.ok, verdict.first_bad_seq) == (False, 1)
    assert verdict.reason is not None and "key missing" in verdict.reason
    assert "PROCTOR_AUDIT_KEY" in verdict.reason


def test_verifying_a_keyed_chain_with_the_wrong_key_fails_at_seq_1_naming_the_key(
    tmp_path: Path,
) -> None:
    with AuditLog(tmp_path / "a.db", key=KEY) as log:
        log.append("r", "k", {})
    with AuditLog(tmp_path / "a.db", key=b"another-key") as log:
        verdict = log.verify("r")
    assert (verdict.ok, verdict.first_bad_seq) == (False, 1)
    assert verdict.reason is not None and "wrong key" in verdict.reason


def test_from_env_keys_the_log_with_proctor_audit_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROCTOR_AUDIT_KEY", "s3cret-ключ")
    with AuditLog.from_env(tmp_path / "a.db") as log:
        event = log.append("r", "k", {})
        assert log.alg == event.alg == "hmac-sha256"
    with AuditLog(tmp_path / "a.db", key="s3cret-ключ".encode()) as log:
        assert log.verify("r").ok


@pytest.mark.parametrize("value", [None, ""])
def test_from_env_without_a_key_writes_plain_sha256(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("PROCTOR_AUDIT_KEY", raising=False)
    else:
        monkeypatch.setenv("PROCTOR_AUDIT_KEY", value)
    with AuditLog.from_env(tmp_path / "a.db") as log:
        assert log.append("r", "k", {}).alg == "sha256"


def test_data_is_redacted_before_it_is_stored_and_the_secret_is_absent_from_the_file(
    tmp_path: Path,
) -> None:
    db = tmp_path / "a.db"
    secret_value = "Hunter2CorrectHorse"
    shaped = "sk-FakeAuditShape0123456789abcdef"
    with AuditLog(db, key=KEY) as log:
        event = log.append(
            "r",
            "proposed",
            {"arguments": {"password": secret_value, "cmd": f"OPENAI_API_KEY={shaped} run"}},
        )
        assert event.alg == "hmac-sha256"
        assert secret_value not in json.dumps(event.data) and shaped not in json.dumps(event.data)
        assert log.verify("r").ok
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("a.db"))
    assert b"[REDACTED" in stored
    assert secret_value.encode() not in stored
    assert shaped.encode() not in stored


def test_digest_arguments_is_keyed_so_raw_arguments_are_provable_without_storing_them(
    tmp_path: Path,
) -> None:
    arguments = {"path": "/tmp/x", "password": "Hunter2"}
    with AuditLog(tmp_path / "k.db", key=KEY) as keyed, AuditLog(tmp_path / "u.db") as plain:
        keyed_value = keyed.digest_arguments(arguments)
        assert keyed_value == keyed_digest(arguments, KEY)
        assert keyed_value.startswith("hmac-sha256:")
        assert keyed_value != keyed_digest(arguments, b"other")
        assert keyed.digest_arguments({**arguments, "password": "other"}) != keyed_value
        assert plain.digest_arguments(arguments).startswith("sha256:")


def test_append_many_writes_one_gap_free_run_of_the_chain_that_verifies(backend: Backend) -> None:
    clock = ManualClock()
    with backend.open(AuditLog, key=KEY, clock=clock) as log:
        log.append("r", "first", {"n": 0})
        batch = log.append_many("r", [("a", {"n": 1}), ("b", {"password": "Hunter2"})])
        assert [(e.seq, e.kind) for e in batch] == [(2, "a"), (3, "b")]
        assert batch[1].prev_hash == batch[0].hash
        assert log.events("r")[1:] == batch
        assert "Hunter2" not in json.dumps(batch[1].data)
        assert log.head("r") == batch[-1].hash and log.verify("r").ok


@pytest.mark.parametrize(
    "events",
    [[], [("a", {"n": 1}), ("", {})], [("a", {"n": 1}), ("b", {"x": object()})]],
    ids=["empty", "empty-kind", "not-json"],
)
def test_append_many_records_all_or_nothing(backend: Backend, events: Any) -> None:
    with backend.open(AuditLog) as log:
        log.append("r", "first", {})
        with pytest.raises(AuditWriteError):
            log.append_many("r", events)
        assert [e.kind for e in log.events("r")] == ["first"]
        assert log.append("r", "next", {}).seq == 2
