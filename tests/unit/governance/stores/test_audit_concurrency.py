"""Concurrent writers never fork a chain: no false positives over thousands of events."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections import Counter
from pathlib import Path

import pytest

from governance.stores._audit import AuditLog

THREADS = 8
PER_THREAD = 300
RUNS = ["run-a", "run-b", "run-c"]


def test_threads_sharing_logs_and_connections_write_only_gap_free_chains(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    # Two log objects (two connections) so both the in-process lock and SQLite's
    # BEGIN IMMEDIATE arbitration are exercised.
    logs = [AuditLog(db, key=b"k"), AuditLog(db, key=b"k")]
    start = threading.Barrier(THREADS, timeout=10)
    errors: list[BaseException] = []

    def writer(index: int) -> None:
        try:
            start.wait()
            log = logs[index % len(logs)]
            for n in range(PER_THREAD):
                log.append(RUNS[(index + n) % len(RUNS)], "step", {"writer": index, "n": n})
        except BaseException as exc:  # surfaced below; a thread's exception is otherwise lost
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(THREADS)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert not any(thread.is_alive() for thread in threads)
        assert errors == []
        verdicts = logs[0].verify_all()
        assert [v.run_id for v in verdicts] == RUNS
        assert all(v.ok for v in verdicts), [v for v in verdicts if not v.ok]
        assert sum(v.events for v in verdicts) == THREADS * PER_THREAD
        written: Counter[tuple[int, int]] = Counter()
        for run_id in RUNS:
            events = logs[1].events(run_id)
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            written.update((e.data["writer"], e.data["n"]) for e in events)
        assert set(written.values()) == {1}, "every append is stored exactly once"
    finally:
        for log in logs:
            log.close()


@pytest.mark.slow
def test_processes_appending_to_one_file_write_only_gap_free_chains(tmp_path: Path) -> None:
    db = tmp_path / "audit.db"
    script = textwrap.dedent(
        """
        import sys
        from governance.stores._audit import AuditLog
        with AuditLog(sys.argv[1]) as log:
            for n in range(100):
                log.append(("run-a", "run-b")[n % 2], "step", {"pid": sys.argv[2], "n": n})
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(db), str(i)], stderr=subprocess.PIPE)
        for i in range(3)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err.decode()
    with AuditLog(db) as log:
        verdicts = log.verify_all()
    assert all(v.ok for v in verdicts) and sum(v.events for v in verdicts) == 300
