"""Processes x threads against one budget: the harness the contention tests share.

Every worker is released at once (each process waits on a line of stdin, its threads on a
barrier) and hammers one budget, each thread with its own store (its own connection) on one
SQLite file or one PostgreSQL database. The caller asserts what may win.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from typing import Any

from governance.core._contracts import Principal, ToolCall
from governance.stores._budgets import Budget, BudgetStore

WORKER = textwrap.dedent(
    """
    import json, sys, threading
    from governance.stores._budgets import Budget, BudgetReservation, BudgetStore
    from governance.core._contracts import Principal, ToolCall

    where, proc, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    attempts = json.loads(sys.argv[4])  # per thread of this process
    budgets = [Budget(**spec) for spec in json.loads(sys.argv[5])]
    runs, outcomes = json.loads(sys.argv[6]), json.loads(sys.argv[7])
    start = threading.Barrier(threads + 1, timeout=60)
    lock = threading.Lock()
    result = {"reserved": [], "denied": {}, "errors": []}

    def open_ledger():
        if where.startswith("postgresql://"):
            from governance.stores._budgets_postgres import PostgresBudgetLedger
            from governance.stores._postgres import PostgresTarget
            return PostgresBudgetLedger(PostgresTarget(where), busy_timeout=60.0)
        return BudgetStore(where, busy_timeout=30.0)

    def work(index):
        try:
            with open_ledger() as store:
                start.wait()
                for n in range(attempts[index]):
                    run = runs[(proc + index + n) % len(runs)]
                    call = ToolCall(f"p{proc}-t{index}-n{n}", "fs.delete", {}, run,
                                    Principal("ann", "bot", "ops"))
                    got = store.reserve(call, "destructive", budgets)
                    if isinstance(got, BudgetReservation) and outcomes:
                        store.settle(got, outcomes[(proc + index + n) % len(outcomes)])
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


@dataclass(frozen=True)
class Contention:
    """What every worker reported, and the wall time from release to the last result."""

    results: list[dict[str, Any]]
    wall: float

    @property
    def errors(self) -> list[str]:
        return [error for r in self.results for error in r["errors"]]

    @property
    def reserved(self) -> list[tuple[str, list[int]]]:
        return [(call, ids) for r in self.results for call, ids in r["reserved"]]

    @property
    def denied(self) -> int:
        return sum(sum(r["denied"].values()) for r in self.results)

    @property
    def reasons(self) -> set[str]:
        return {reason for r in self.results for reason in r["denied"]}


def spec(budget: Budget) -> dict[str, Any]:
    return {
        "id": budget.id,
        "description": budget.description,
        "scope": budget.scope,
        "limit": budget.limit,
        "window_seconds": budget.window_seconds,
        "counts": list(budget.counts),
        "tools": list(budget.tools),
    }


def split(total: int, processes: int, threads: int) -> list[list[int]]:
    """`total` attempts over processes x threads, as evenly as it divides."""
    workers = processes * threads
    each = [total // workers + (i < total % workers) for i in range(workers)]
    return [each[p * threads : (p + 1) * threads] for p in range(processes)]


def contend(
    where: str,
    budgets: list[Budget],
    runs: list[str],
    *,
    processes: int,
    threads: int,
    attempts: int,
    outcomes: tuple[str, ...] = (),
) -> Contention:
    """Start every worker, release them together, and return what they got.

    `where`: a SQLite file (its schema made first) or a migrated PostgreSQL database's URL.
    `outcomes`: each win is settled with the next of these (none: left `reserved`).
    """
    if not where.startswith("postgresql://"):
        with BudgetStore(where):
            pass  # the schema exists before anyone contends
    specs = json.dumps([spec(b) for b in budgets])
    shares = split(attempts, processes, threads)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, where, str(p), str(threads), json.dumps(shares[p]),
             specs, json.dumps(runs), json.dumps(list(outcomes))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for p in range(processes)
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
        outputs = [proc.communicate(timeout=300) for proc in procs]
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
    return Contention(results, wall)


def any_call(run: str) -> ToolCall:
    return ToolCall("probe", "fs.delete", {}, run, Principal("ann", "bot", "ops"))
