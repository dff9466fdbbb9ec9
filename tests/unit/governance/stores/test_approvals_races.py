"""Real threads racing on one request: the conditional update (in memory: the check-and-set
under the store's lock) lets exactly one of them win, on every backend."""

from __future__ import annotations

import datetime as dt
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from governance.core._clock import ManualClock
from governance.core._contracts import Principal
from governance.stores._approvals import ApprovalConflict, ApprovalRequest, ApprovalStore
from governance.stores._approvals_memory import MemoryApprovalStore
from governance.stores._postgres import PostgresTarget
from tests.store_backends import postgres_class

T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
ROUNDS = 40
MEMORY_ROUNDS = 400  # a memory round takes microseconds: many more of them, to catch a race
POSTGRES_ROUNDS = 150  # a server round takes milliseconds: more than a file's, still quick
THREADS = 8
ALICE = Principal(actor="alice", agent="ops-agent", team="platform")


def _hold(store: ApprovalStore, n: int) -> ApprovalRequest:
    """Request n falls due at T0 + 300 + 10 n, so a sweep for round n touches only it."""
    call_id = f"c{n}"
    return store.create(
        run_id="run-1",
        call_id=call_id,
        tool="fs.delete",
        arguments={"path": f"notes/{call_id}.txt"},
        arguments_digest="sha256:" + "a" * 64,
        principal=ALICE,
        policy_digest="sha256:" + "p" * 64,
        rule_ids=("approve-deletes",),
        reason="rule:approve-deletes",
        risk="high",
        ttl_seconds=300 + 10 * n,
    )


def _run_in_lockstep(
    ids: list[str], workers: list[Callable[[str], Any]], sweeper_clock: ManualClock | None = None
) -> dict[str, list[tuple[int, Any]]]:
    """Each worker handles every id; a barrier releases all workers on one id at a time.

    Before each release the sweeper's clock moves to the current request's deadline.
    Returns, per id, what each worker got: its return value or the ApprovalConflict it raised.
    """

    def next_round() -> None:
        if sweeper_clock is not None:
            sweeper_clock.advance(10)

    barrier = threading.Barrier(len(workers), action=next_round, timeout=20)
    outcomes: dict[str, list[tuple[int, Any]]] = {rid: [] for rid in ids}
    lock = threading.Lock()
    crashed: list[BaseException] = []

    def run(index: int) -> None:
        try:
            for rid in ids:
                barrier.wait()
                try:
                    got: Any = workers[index](rid)
                except ApprovalConflict as exc:
                    got = exc
                with lock:
                    outcomes[rid].append((index, got))
        except BaseException as exc:  # surfaced below; a thread's exception is otherwise lost
            crashed.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(workers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    assert crashed == []
    return outcomes


@pytest.fixture
def sweeper_clock() -> ManualClock:
    """Ten seconds before the first request's deadline; each round moves it to the next one."""
    return ManualClock(T0 + dt.timedelta(seconds=290))


def _rounds(store: ApprovalStore) -> int:
    if isinstance(store, MemoryApprovalStore):
        return MEMORY_ROUNDS
    return POSTGRES_ROUNDS if isinstance(store, postgres_class(ApprovalStore)) else ROUNDS


class _PerThreadClock:
    """The reviewers' time, or the sweeper's in a thread that is sweeping right now."""

    def __init__(self, early: ManualClock, late: ManualClock) -> None:
        self.early, self.late = early, late
        self.local = threading.local()

    def now(self) -> dt.datetime:
        return (self.late if getattr(self.local, "late", False) else self.early).now()


class _AsSweeper:
    """One memory store seen on the sweeper's clock: every method runs in its time."""

    def __init__(self, store: MemoryApprovalStore, clock: _PerThreadClock) -> None:
        self._store, self._clock = store, clock

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, name)

        def in_late_time(*args: Any, **kwargs: Any) -> Any:
            self._clock.local.late = True
            try:
                return method(*args, **kwargs)
            finally:
                self._clock.local.late = False

        return in_late_time


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def stores(
    request: pytest.FixtureRequest, tmp_path: Path, sweeper_clock: ManualClock
) -> Iterator[dict[str, ApprovalStore]]:
    """Several connections to one file or one PostgreSQL database (the server's conditional
    UPDATE is the only arbiter), or every worker on one memory store (its lock is the only
    arbiter: threads switch as often as possible to widen every race); the reviewers' clock
    stays before every deadline."""
    now, late = ManualClock(T0), sweeper_clock
    if request.param == "memory":
        clock = _PerThreadClock(now, late)
        shared = MemoryApprovalStore(clock=clock)
        store: Any = shared
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        try:
            yield {"a": store, "b": store, "c": store, "sweeper": _AsSweeper(shared, clock)}
        finally:
            sys.setswitchinterval(interval)
            shared.close()
        return
    opened: dict[str, Any]
    if request.param == "postgres":
        cluster = request.getfixturevalue("postgres_cluster")
        url = cluster.create_database(template=request.getfixturevalue("migrated_template"))
        on_server = postgres_class(ApprovalStore)
        opened = {
            "a": on_server(PostgresTarget(url), clock=now),
            "b": on_server(PostgresTarget(url), clock=now),
            "c": on_server(PostgresTarget(url), clock=now),
            "sweeper": on_server(PostgresTarget(url), clock=late),
        }
    else:
        path = tmp_path / "approvals.db"
        opened = {
            "a": ApprovalStore(path, clock=now),
            "b": ApprovalStore(path, clock=now),
            "c": ApprovalStore(path, clock=now),
            "sweeper": ApprovalStore(path, clock=late),
        }
    try:
        yield opened
    finally:
        for each in opened.values():
            each.close()


def test_reviewers_canceller_and_sweeper_racing_on_a_request_leave_exactly_one_winner(
    stores: dict[str, ApprovalStore], sweeper_clock: ManualClock
) -> None:
    a, b, c, sweeper = stores["a"], stores["b"], stores["c"], stores["sweeper"]
    ids = [_hold(a, n).id for n in range(_rounds(a))]
    # (what the worker does, the status it produces, who decided) - two workers share a store
    # so both the store's lock and SQLite's own locking are raced.
    workers: list[tuple[Callable[[str], Any], str, str | None]] = [
        (lambda rid: a.approve(rid, "bob"), "approved", "bob"),
        (lambda rid: b.approve(rid, "dave", arguments={"path": "x"}), "approved", "dave"),
        (lambda rid: a.reject(rid, "carol", comment="no"), "rejected", "carol"),
        (lambda rid: b.reject(rid, "erin", comment="no"), "rejected", "erin"),
        (lambda rid: c.cancel(rid, by="runner", reason="run ended"), "cancelled", "runner"),
        (lambda rid: c.cancel(rid, by="gateway", reason="shutdown"), "cancelled", "gateway"),
        (lambda rid: sweeper.expire_due(), "expired", None),
        (lambda rid: sweeper.expire_due(), "expired", None),
    ]
    assert len(workers) == THREADS
    outcomes = _run_in_lockstep(ids, [work for work, _, _ in workers], sweeper_clock)
    winners: Counter[str] = Counter()
    for rid in ids:
        final = a.get(rid)
        assert final.status != "pending"
        won = []
        for index, got in outcomes[rid]:
            _, status, who = workers[index]
            if isinstance(got, ApprovalConflict):
                assert got.current_status == final.status, (rid, index, got)
            elif isinstance(got, list):  # the sweep: it lists what it expired
                assert set(got) <= {rid}
                if got:
                    won.append(index)
            else:
                assert isinstance(got, ApprovalRequest)
                assert got.id == rid and got.status == status
                won.append(index)
        assert len(won) == 1, (rid, outcomes[rid])
        _, status, who = workers[won[0]]
        assert final.status == status
        assert final.decided_by == who
        winners[status] += 1
    assert sum(winners.values()) == len(ids)


def test_approvers_racing_the_expiry_at_the_deadline_leave_one_winner(
    stores: dict[str, ApprovalStore], sweeper_clock: ManualClock
) -> None:
    a, b, sweeper = stores["a"], stores["b"], stores["sweeper"]
    ids = [_hold(a, n).id for n in range(_rounds(a))]
    workers: list[Callable[[str], Any]] = [
        lambda rid: a.approve(rid, "bob"),
        lambda rid: b.approve(rid, "dave"),
        lambda rid: sweeper.expire_due(),
        # The late store's own approve must discover the expiry and record it, not approve.
        lambda rid: sweeper.approve(rid, "erin"),
    ]
    outcomes = _run_in_lockstep(ids, workers, sweeper_clock)
    for rid in ids:
        final = a.get(rid)
        approvals = [got for _, got in outcomes[rid] if isinstance(got, ApprovalRequest)]
        swept = [got for _, got in outcomes[rid] if isinstance(got, list) and got]
        conflicts = [got for _, got in outcomes[rid] if isinstance(got, ApprovalConflict)]
        assert len(approvals) + len(swept) <= 1, outcomes[rid]
        assert all(c.current_status == final.status for c in conflicts)
        if final.status == "approved":
            assert [r.decided_by for r in approvals] == [final.decided_by]
            assert final.decided_by in ("bob", "dave")
        else:
            assert final.status == "expired" and final.status_reason == "expired"
            assert approvals == []
        erin = outcomes[rid][[i for i, _ in outcomes[rid]].index(3)][1]
        assert isinstance(erin, ApprovalConflict), "a reviewer past the deadline never wins"


def test_eight_threads_consuming_one_approval_get_true_exactly_once(
    stores: dict[str, ApprovalStore],
) -> None:
    a, b, c = stores["a"], stores["b"], stores["c"]
    ids = []
    for n in range(_rounds(a)):
        rid = _hold(a, n).id
        a.approve(rid, "bob")
        ids.append(rid)
    per_worker = [a, a, a, b, b, b, c, c]
    outcomes = _run_in_lockstep(ids, [store.consume for store in per_worker])
    for rid in ids:
        results = [got for _, got in outcomes[rid]]
        assert len(results) == THREADS
        assert results.count(True) == 1, (rid, results)
        assert results.count(False) == THREADS - 1
        assert a.get(rid).consumed is True


def test_creators_on_several_connections_get_distinct_gap_free_ids(
    stores: dict[str, ApprovalStore],
) -> None:
    creators = [stores["a"], stores["b"], stores["c"], stores["a"], stores["b"], stores["c"]]
    per_creator = 25
    start = threading.Barrier(len(creators), timeout=20)
    made: list[tuple[int, int, str]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def create(index: int) -> None:
        try:
            start.wait()
            for n in range(per_creator):
                got = _hold(creators[index], 1000 * index + n)
                with lock:
                    made.append((index, n, got.id))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(len(creators))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    total = len(creators) * per_creator
    assert sorted(int(rid.removeprefix("apr-")) for _, _, rid in made) == list(range(1, total + 1))
    listed = stores["a"].list()
    assert [r.id for r in listed] == [f"apr-{n}" for n in range(1, total + 1)]
    for index, n, rid in made:  # each id names the request its creator made
        assert stores["c"].get(rid).call_id == f"c{1000 * index + n}"
