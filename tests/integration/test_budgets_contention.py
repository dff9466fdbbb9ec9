"""Exact-limit contention: processes x threads, each with its own store on one SQLite file.

Every worker is released at once (each process waits on a line of stdin, its threads on a
barrier) and hammers one budget. Exactly `limit` reservations may succeed, no more, no fewer.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from governance.stores._budgets import Budget, BudgetStore

PROCESSES = 4
THREADS = 4
ATTEMPTS = 30  # per thread: 4 x 4 x 30 = 480 attempts
LIMIT = 25

WORKER = textwrap.dedent(
    """
    import json, sys, threading
    from governance.stores._budgets import Budget, BudgetDenial, BudgetReservation, BudgetStore
    from governance.core._contracts import Principal, ToolCall

    db, proc, threads, attempts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    budgets = [Budget(**spec) for spec in json.loads(sys.argv[5])]
    runs = json.loads(sys.argv[6])
    start = threading.Barrier(threads + 1, timeout=60)
    lock = threading.Lock()
    result = {"reserved": [], "denied": {}, "errors": []}

    def work(index):
        try:
            with BudgetStore(db, busy_timeout=30.0) as store:
                start.wait()
                for n in range(attempts):
                    run = runs[(proc + index + n) % len(runs)]
                    call = ToolCall(f"p{proc}-t{index}-n{n}", "fs.delete", {}, run,
                                    Principal("ann", "bot", "ops"))
                    got = store.reserve(call, "destructive", budgets)
                    with lock:
                        if isinstance(got, BudgetReservation):
                            result["reserved"].append([call.call_id, list(got.ids)])
                        else:
                            result["denied"][got.reason] = result["denied"].get(got.reason, 0) + 1
        except BaseException as exc:
            with lock:
                result["errors"].append(repr(exc))
            start.abort()

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    print("ready", flush=True)
    if sys.stdin.readline().strip() == "go":
        try:
            start.wait()
        except threading.BrokenBarrierError:
            pass
    else:
        start.abort()
    for worker in workers:
        worker.join(timeout=120)
    print(json.dumps(result), flush=True)
    """
)


def _spec(budget: Budget) -> dict[str, Any]:
    return {
        "id": budget.id,
        "description": budget.description,
        "scope": budget.scope,
        "limit": budget.limit,
        "window_seconds": budget.window_seconds,
        "counts": list(budget.counts),
        "tools": list(budget.tools),
    }


def _contend(db: Path, budgets: list[Budget], runs: list[str]) -> tuple[list[Any], float]:
    """Start every worker, release them together, and return their results and the wall time."""
    with BudgetStore(db):
        pass  # the schema exists before anyone contends
    specs = json.dumps([_spec(b) for b in budgets])
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(db), str(p), str(THREADS), str(ATTEMPTS), specs,
             json.dumps(runs)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for p in range(PROCESSES)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready", proc.stderr and proc.stderr.read()
        started = time.perf_counter()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()  # communicate() closes it
        outputs = [proc.communicate(timeout=180) for proc in procs]
        wall = time.perf_counter() - started
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    results = []
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results, wall


@pytest.mark.slow
def test_exactly_the_limit_is_reserved_when_processes_and_threads_race(tmp_path: Path) -> None:
    db = tmp_path / "budgets.db"
    budget = Budget("destructive-per-run", "", "agent_run", LIMIT, 3600)
    results, wall = _contend(db, [budget], ["run-1"])

    attempts = PROCESSES * THREADS * ATTEMPTS
    assert [r["errors"] for r in results] == [[]] * PROCESSES
    reserved = [item for r in results for item in r["reserved"]]
    denied = sum(sum(r["denied"].values()) for r in results)
    print(
        f"\nbudget contention: {PROCESSES} processes x {THREADS} threads, {attempts} attempts, "
        f"limit {LIMIT}: {len(reserved)} reserved, {denied} denied in {wall:.2f} s"
    )
    assert len(reserved) == LIMIT
    assert denied == attempts - LIMIT
    assert {reason for r in results for reason in r["denied"]} == {"budget_exhausted:agent_run"}
    with BudgetStore(db) as store:
        rows = store.ledger()
        assert len(rows) == LIMIT
        assert {row.status for row in rows} == {"reserved"}
        assert sorted(row.call_id for row in rows) == sorted(call for call, _ in reserved)
        assert sorted(row.id for row in rows) == sorted(i for _, ids in reserved for i in ids)
        assert store.usage(_any_call("run-1"), [budget]) == {budget.id: LIMIT}


@pytest.mark.slow
def test_two_budgets_are_checked_and_charged_together_under_contention(tmp_path: Path) -> None:
    # Two runs share one actor: the actor budget runs out first, and every success must be
    # charged to both budgets in the same transaction.
    db = tmp_path / "budgets.db"
    per_run = Budget("per-run", "", "agent_run", 1000, 3600)
    per_actor = Budget("per-actor", "", "actor", LIMIT, 3600)
    results, wall = _contend(db, [per_run, per_actor], ["run-1", "run-2"])

    assert [r["errors"] for r in results] == [[]] * PROCESSES
    reserved = [item for r in results for item in r["reserved"]]
    print(f"\ntwo-budget contention: {len(reserved)} reserved in {wall:.2f} s")
    assert len(reserved) == LIMIT
    assert {reason for r in results for reason in r["denied"]} == {"budget_exhausted:actor"}
    assert all(len(ids) == 2 for _, ids in reserved)
    with BudgetStore(db) as store:
        assert len(store.ledger("per-actor", "ann")) == LIMIT
        assert len(store.ledger("per-run")) == LIMIT
        by_run = store.usage(_any_call("run-1"), [per_run])["per-run"]
        assert by_run + store.usage(_any_call("run-2"), [per_run])["per-run"] == LIMIT


def _any_call(run: str) -> Any:
    from governance.core._contracts import Principal, ToolCall

    return ToolCall("probe", "fs.delete", {}, run, Principal("ann", "bot", "ops"))
