"""Opening one SQLite file from several connections at once: the switch to WAL waits for the
others instead of failing with "database is locked" (SQLite answers that switch with BUSY at
once, without its busy handler, while another connection holds a RESERVED lock)."""

from __future__ import annotations

import sqlite3
import textwrap
import threading
import time
from pathlib import Path

import pytest

from governance.stores._sqlite import open_connection
from tests.child_processes import failures, run_python_children


def _reserved_lock_on_new_file(path: Path) -> sqlite3.Connection:
    """A rollback-journal file with another connection inside a write transaction."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO t VALUES (1)")
    return holder


def test_switch_to_wal_waits_for_a_writer_that_finishes(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    holder = _reserved_lock_on_new_file(db)
    release = threading.Timer(0.3, lambda: holder.execute("COMMIT"))
    release.start()
    try:
        conn = open_connection(db, durability="fsync", busy_timeout=10.0)
    finally:
        release.join()
        holder.close()
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("SELECT x FROM t").fetchall() == [(1,)]  # the writer's commit kept
    finally:
        conn.close()


def test_switch_to_wal_gives_up_at_the_busy_timeout_naming_the_lock(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    holder = _reserved_lock_on_new_file(db)
    try:
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            open_connection(db, durability="os", busy_timeout=0.4)
        waited = time.monotonic() - started
    finally:
        holder.close()
    assert waited >= 0.2, "gave up before the timeout: the switch was not retried"
    assert waited < 30, "kept waiting past the timeout"


def test_other_errors_are_not_retried(tmp_path: Path) -> None:
    not_a_database = tmp_path / "store.db"
    not_a_database.write_bytes(b"this is not an SQLite file, it is long enough to have a header")
    started = time.monotonic()
    with pytest.raises(sqlite3.DatabaseError, match="not a database"):
        open_connection(not_a_database, durability="fsync", busy_timeout=5.0)
    assert time.monotonic() - started < 2.5


@pytest.mark.slow
@pytest.mark.parametrize("store", ["audit", "approvals", "budgets"])
def test_processes_opening_one_new_file_together_all_succeed(tmp_path: Path, store: str) -> None:
    # Six processes wait for one moment, then open (and create) the same new file: whichever
    # wins the schema, every other one gets in.
    opener = {
        "audit": "from governance.stores._audit import AuditLog as S",
        "approvals": "from governance.stores._approvals import ApprovalStore as S",
        "budgets": "from governance.stores._budgets import BudgetStore as S",
    }[store]
    script = textwrap.dedent(
        f"""
        import sys, time
        {opener}
        go = float(sys.argv[2])
        time.sleep(max(0.0, go - time.time()))
        S(sys.argv[1]).close()
        """
    )
    for attempt in range(3):
        db = tmp_path / f"{store}-{attempt}.db"
        go = time.time() + 2.0  # after every interpreter has started and imported
        finished = run_python_children(script, [[str(db), repr(go)]] * 6, timeout=60)
        assert failures(finished) == []
        probe = sqlite3.connect(db)
        try:
            assert probe.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        finally:
            probe.close()
