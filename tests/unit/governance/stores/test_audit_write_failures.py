"""Every way an append can fail raises AuditWriteError and leaves no row behind (fail closed)."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

from governance.core._clock import ManualClock
from governance.core._errors import AuditWriteError
from governance.stores._audit import AuditLog


@contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    with closing(sqlite3.connect(path)) as conn, conn:
        yield conn


def count(path: Path) -> int:
    with raw(path) as conn:
        return int(conn.execute("SELECT count(*) FROM audit_events").fetchone()[0])


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "audit.db"
    with AuditLog(path) as log:
        log.append("r", "proposed", {"n": 1})
    return path


def test_append_to_a_closed_log_raises_and_adds_nothing(db: Path) -> None:
    log = AuditLog(db)
    log.close()
    log.close()  # idempotent
    with pytest.raises(AuditWriteError, match="closed"):
        log.append("r", "executed", {})
    assert count(db) == 1


def test_an_sqlite_failure_inside_the_insert_raises_rolls_back_and_the_chain_resumes_gap_free(
    db: Path,
) -> None:
    with raw(db) as conn:
        conn.execute(
            "CREATE TRIGGER fail BEFORE INSERT ON audit_events "
            "BEGIN SELECT RAISE(ABORT, 'simulated disk full'); END"
        )
    with AuditLog(db) as log:
        with pytest.raises(AuditWriteError, match="simulated disk full") as info:
            log.append("r", "executed", {"n": 2})
        assert str(db) in str(info.value) and "'r'" in str(info.value)
        assert count(db) == 1
        with raw(db) as conn:
            conn.execute("DROP TRIGGER fail")
        assert log.append("r", "executed", {"n": 2}).seq == 2
        assert log.verify("r").ok


def test_a_lock_held_past_the_busy_timeout_raises_and_adds_nothing(db: Path) -> None:
    with AuditLog(db, busy_timeout=0.05) as log, closing(sqlite3.connect(db)) as other:
        other.isolation_level = None
        other.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(AuditWriteError, match="locked"):
                log.append("r", "executed", {})
        finally:
            other.execute("ROLLBACK")
        assert count(db) == 1
        assert log.append("r", "executed", {}).seq == 2


def test_a_read_only_log_refuses_to_append_and_never_writes(db: Path) -> None:
    before = db.read_bytes()
    with AuditLog(db, readonly=True) as log:
        with pytest.raises(AuditWriteError, match="read-only"):
            log.append("r", "executed", {})
        assert log.verify("r").ok
    assert count(db) == 1
    assert db.read_bytes() == before


@pytest.mark.parametrize(
    ("run_id", "kind", "data"),
    [
        ("r", "k", {"handle": object()}),
        ("r", "k", {"ratio": float("nan")}),
        ("r", "k", {"blob": b"bytes"}),
        ("r", "k", ["not", "a", "mapping"]),
        ("", "k", {}),
        ("r", "", {}),
    ],
    ids=["object", "nan", "bytes", "list", "empty-run", "empty-kind"],
)
def test_data_that_cannot_be_recorded_raises_and_adds_nothing(
    db: Path, run_id: str, kind: str, data: Any
) -> None:
    with AuditLog(db) as log, pytest.raises(AuditWriteError):
        log.append(run_id, kind, data)
    assert count(db) == 1


class _BrokenClock:
    def now(self) -> dt.datetime:
        raise RuntimeError("clock exploded")


class _NaiveClock:
    def now(self) -> dt.datetime:
        return dt.datetime(2026, 1, 1)  # noqa: DTZ001 - the bug under test


@pytest.mark.parametrize("clock", [_BrokenClock(), _NaiveClock()], ids=["raises", "naive"])
def test_a_bad_clock_raises_audit_write_error_and_adds_nothing(db: Path, clock: Any) -> None:
    with AuditLog(db, clock=clock) as log, pytest.raises(AuditWriteError):
        log.append("r", "executed", {})
    assert count(db) == 1


def test_appending_with_another_alg_than_the_run_started_with_is_refused(db: Path) -> None:
    with AuditLog(db, key=b"key-added-mid-run", clock=ManualClock()) as log:
        with pytest.raises(AuditWriteError, match="PROCTOR_AUDIT_KEY"):
            log.append("r", "executed", {})
        assert log.append("fresh-run", "proposed", {}).alg == "hmac-sha256"
    assert count(db) == 2


def test_a_log_that_cannot_be_opened_raises_audit_write_error(tmp_path: Path) -> None:
    with pytest.raises(AuditWriteError, match="cannot open"):
        AuditLog(tmp_path / "missing-dir" / "audit.db")
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("these are not the pages you are looking for\n" * 100)
    with pytest.raises(AuditWriteError, match="cannot open"):
        AuditLog(not_a_db)


def test_arguments_that_cannot_be_digested_raise_audit_write_error(db: Path) -> None:
    with AuditLog(db) as log, pytest.raises(AuditWriteError):
        log.digest_arguments({"x": object()})
