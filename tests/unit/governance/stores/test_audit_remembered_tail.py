"""A log remembers the last event it wrote to a run: its next write there is one INSERT with no
read first, and a stale memory (another connection wrote meanwhile) never forks the chain."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from governance.core._errors import AuditWriteError
from governance.stores._audit import AuditLog


def _statements(log: AuditLog) -> list[str]:
    seen: list[str] = []
    assert log._conn is not None
    log._conn.set_trace_callback(seen.append)
    return seen


def test_a_log_writes_its_next_batch_of_a_run_as_one_insert_without_reading_the_run(
    tmp_path: Path,
) -> None:
    log = AuditLog(tmp_path / "audit.db", durability="os")
    try:
        log.append("run-1", "tool.requested", {"n": 0})
        seen = _statements(log)
        log.append_many("run-1", [("policy.decided", {"n": 1}), ("execution.started", {"n": 2})])
        log.append("run-1", "execution.completed", {"n": 3})
        assert len(seen) == 2, seen
        assert all(s.lstrip().upper().startswith("INSERT INTO AUDIT_EVENTS") for s in seen), seen
        assert [e.seq for e in log.events("run-1")] == [1, 2, 3, 4]
        assert log.verify("run-1").ok
    finally:
        log.close()


@pytest.mark.parametrize("batch", [1, 3])
def test_a_log_whose_run_was_extended_by_another_connection_chains_onto_that_event(
    tmp_path: Path, batch: int
) -> None:
    db = tmp_path / "audit.db"
    mine, theirs = AuditLog(db, key=b"k"), AuditLog(db, key=b"k")
    try:
        mine.append("run-1", "step", {"by": "mine"})
        theirs.append_many("run-1", [("step", {"by": "theirs"}), ("step", {"by": "theirs"})])
        written = mine.append_many(
            "run-1", [("step", {"by": "mine", "n": n}) for n in range(batch)]
        )
        events = theirs.events("run-1")
        assert [e.seq for e in events] == list(range(1, 4 + batch))
        assert written[0].seq == 4 and written[0].prev_hash == events[2].hash
        assert [e.data["by"] for e in events] == ["mine", "theirs", "theirs"] + ["mine"] * batch
        assert theirs.verify("run-1").ok
        # ...and the writer that lost the race remembers the new end: one INSERT again.
        seen = _statements(mine)
        mine.append("run-1", "step", {"by": "mine"})
        assert len(seen) == 1 and seen[0].lstrip().upper().startswith("INSERT"), seen
        assert mine.verify("run-1").ok
    finally:
        mine.close()
        theirs.close()


def test_a_write_that_fails_on_a_locked_file_stores_nothing_and_the_next_write_chains_on(
    tmp_path: Path,
) -> None:
    db = tmp_path / "audit.db"
    log = AuditLog(db, busy_timeout=0.05)
    blocker = sqlite3.connect(db, isolation_level=None)
    try:
        log.append("run-1", "step", {"n": 1})
        blocker.execute("BEGIN IMMEDIATE")  # another writer holds the file
        with pytest.raises(AuditWriteError):
            log.append("run-1", "step", {"n": 2})
        blocker.execute(
            "INSERT INTO audit_events VALUES ('run-2', 1, 'x', 't', '{}', 'a', 'p', 'h')"
        )
        blocker.execute("ROLLBACK")
        log.append("run-1", "step", {"n": 3})
        events = log.events("run-1")
        assert [(e.seq, e.data["n"]) for e in events] == [(1, 1), (2, 3)]
        assert log.verify("run-1").ok
        assert log.run_ids() == ["run-1"]
    finally:
        blocker.close()
        log.close()


def test_a_log_remembers_a_bounded_number_of_runs_and_still_chains_the_forgotten_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("governance.stores._audit._TAILS_KEPT", 2)
    log = AuditLog(tmp_path / "audit.db", durability="os")
    try:
        for run in ("a", "b", "c", "a", "b", "c"):
            log.append(run, "step", {"run": run})
        assert len(log._tails) == 2
        for run in ("a", "b", "c"):
            assert [e.seq for e in log.events(run)] == [1, 2]
            assert log.verify(run).ok
    finally:
        log.close()
