"""Concurrent writers never fork a chain: no false positives over thousands of events, from
threads and from processes, on one SQLite file and on one PostgreSQL database."""

from __future__ import annotations

import textwrap
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from governance.stores._audit import AuditLog
from governance.stores._postgres import PostgresTarget
from tests.child_processes import failures, run_python_children
from tests.store_backends import postgres_class

THREADS = 8
PER_THREAD = 300
PROCESSES = 4
RUNS = ["run-a", "run-b", "run-c"]


@pytest.fixture(params=["sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """Opens another log object (another connection) on one shared file or database."""
    opened: list[Any] = []

    def sqlite() -> Any:
        opened.append(AuditLog(tmp_path / "audit.db", key=b"k"))
        return opened[-1]

    def postgres() -> Any:
        opened.append(postgres_class(AuditLog)(PostgresTarget(url), key=b"k"))
        return opened[-1]

    if request.param == "postgres":
        cluster = request.getfixturevalue("postgres_cluster")
        url = cluster.create_database(template=request.getfixturevalue("migrated_template"))
        yield postgres
    else:
        yield sqlite
    for log in opened:
        log.close()


def test_threads_sharing_logs_and_connections_write_only_gap_free_chains(
    opener: Callable[[], Any],
) -> None:
    # Two log objects (two connections) so both the in-process lock and the database's own
    # arbitration (SQLite's BEGIN IMMEDIATE, PostgreSQL's per-run lock and key) are exercised.
    logs = [opener(), opener()]
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
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
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
    finished = run_python_children(script, [[str(db), str(i)] for i in range(3)], timeout=60)
    assert failures(finished) == []
    with AuditLog(db) as log:
        verdicts = log.verify_all()
    assert all(v.ok for v in verdicts) and sum(v.events for v in verdicts) == 300


@pytest.mark.slow
def test_processes_appending_to_one_postgres_database_write_only_gap_free_chains(
    postgres_cluster: Any, migrated_template: str
) -> None:
    url = postgres_cluster.create_database(template=migrated_template)
    # Each process writes single events and batches, so both the one-statement write onto a
    # remembered tail and the locked transaction collide with the other processes.
    script = textwrap.dedent(
        """
        import sys
        from governance.stores._audit_postgres import PostgresAuditLog
        from governance.stores._postgres import PostgresTarget
        with PostgresAuditLog(PostgresTarget(sys.argv[1]), key=b"k") as log:
            for n in range(150):
                run = ("run-a", "run-b", "run-c")[n % 3]
                if n % 5 == 0:
                    log.append_many(run, [("step", {"pid": sys.argv[2], "n": n, "part": p})
                                          for p in range(3)])
                else:
                    log.append(run, "step", {"pid": sys.argv[2], "n": n, "part": 0})
        """
    )
    finished = run_python_children(script, [[url, str(i)] for i in range(PROCESSES)], timeout=120)
    assert failures(finished) == []
    with postgres_class(AuditLog)(PostgresTarget(url), key=b"k") as log:
        verdicts = log.verify_all()
        assert [v.run_id for v in verdicts] == RUNS
        assert all(v.ok for v in verdicts), [v for v in verdicts if not v.ok]
        per_process = 120 * 1 + 30 * 3
        assert sum(v.events for v in verdicts) == PROCESSES * per_process
        written: Counter[tuple[str, int, int]] = Counter()
        for run_id in RUNS:
            events = log.events(run_id)
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            written.update((e.data["pid"], e.data["n"], e.data["part"]) for e in events)
            batches = [i for i, e in enumerate(events) if e.data["n"] % 5 == 0]
            for i in batches[::3]:  # a batch's three events sit together, in order
                assert [e.data["part"] for e in events[i : i + 3]] == [0, 1, 2]
                assert len({(e.data["pid"], e.data["n"]) for e in events[i : i + 3]}) == 1
        assert set(written.values()) == {1}, "every append is stored exactly once"
