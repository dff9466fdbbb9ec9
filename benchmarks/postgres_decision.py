"""The store work of one governed call on PostgreSQL: latency p50/p95, beside SQLite.

Run: .venv/bin/python benchmarks/postgres_decision.py [--calls N] [--threads T] [--url URL]
Results are written down in benchmarks/RESULTS.md with the command that produced them.

Without --url it starts a throwaway server as the tests do (tests/postgres_cluster.py: initdb,
pg_ctl on a loopback port, fsync off - so this measures round trips and locking, not disk) and
migrates a fresh database. Per governed call the firewall reserves the call's budgets before
it executes and settles them after, and the audit events are appended as the firewall writes
them (request + decision ahead of the tool, the outcome after). Measured: N calls one after
another on one connection, then the whole `firewall.call` of a Gateway with all three stores on
the server (an allowed local read; a destructive call under a budget), then T threads each with
its own connection reserving and settling against ONE budget key (the advisory lock serialises
them: the contended case) and against T different keys. SQLite (`fsync` and `os` durability)
runs the same loops for scale.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from governance import Principal, ToolCall  # noqa: E402
from governance.stores import Budget, BudgetReservation, BudgetStore  # noqa: E402

BUDGETS = [
    Budget("per-run", "", "agent_run", 10**9, 3600),
    Budget("per-actor", "", "actor", 10**9, 3600),
]


def _call(n: int, run: str = "run-1") -> ToolCall:
    return ToolCall(f"c{n}", "fs.delete", {"path": f"notes/{n}"}, run, Principal("ann", "b", "o"))


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p50 = statistics.median(ordered) * 1000
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000
    return f"p50 {p50:6.2f} ms  p95 {p95:6.2f} ms  mean {statistics.fmean(ordered) * 1000:6.2f} ms"


def _one_call(ledger: Any, audit: Any | None, n: int, run: str = "run-1") -> None:
    call = _call(n, run)
    if audit is not None:
        audit.append_many(run, [("tool.requested", {"call_id": call.call_id}),
                                ("policy.decided", {"call_id": call.call_id})])  # fmt: skip
    got = ledger.reserve(call, "destructive", BUDGETS)
    assert isinstance(got, BudgetReservation), got
    ledger.settle(got, "executed")
    if audit is not None:
        audit.append(run, "tool.completed", {"call_id": call.call_id})


def _serial(name: str, ledger: Any, audit: Any | None, calls: int) -> None:
    for n in range(20):  # warm up: connection, plans, caches
        _one_call(ledger, audit, -n - 1, "warm-up")
    samples = []
    for n in range(calls):
        started = time.perf_counter()
        _one_call(ledger, audit, n)
        samples.append(time.perf_counter() - started)
    what = "reserve+settle" + (" + audit" if audit is not None else "")
    print(f"{name:<22} {what:<24} {calls:>5} calls  {_percentiles(samples)}")


def _threaded(name: str, open_ledger: Callable[[], Any], threads: int, calls: int, *,
              same_key: bool) -> None:  # fmt: skip
    ledgers = [open_ledger() for _ in range(threads)]
    start = threading.Barrier(threads)
    samples: list[float] = []
    lock = threading.Lock()

    def work(index: int) -> None:
        run = "run-shared" if same_key else f"run-{index}"
        mine = []
        start.wait()
        for n in range(calls // threads):
            began = time.perf_counter()
            _one_call(ledgers[index], None, index * calls + n, run)
            mine.append(time.perf_counter() - began)
        with lock:
            samples.extend(mine)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    began = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    wall = time.perf_counter() - began
    for ledger in ledgers:
        ledger.close()
    keys = "one key" if same_key else f"{threads} keys"
    print(
        f"{name:<22} {threads} threads, {keys:<9}  {len(samples):>5} calls  "
        f"{_percentiles(samples)}  {len(samples) / wall:7.0f} calls/s"
    )


@contextmanager
def _server(url: str | None) -> Iterator[str]:
    if url is not None:
        yield url
        return
    from tests.postgres_cluster import running_cluster

    with running_cluster() as cluster:
        yield cluster.create_database("bench")


GATEWAY_POLICY = """
version: 1
rules:
  - {id: lookups, effect: allow, match: {tool: orders.lookup}}
  - {id: deletes, effect: allow, match: {tool: fs.delete}}
budgets:
  - {id: deletes-per-run, scope: agent_run, limit: 1000000000, window_seconds: 3600,
     counts: [destructive], tools: [fs.delete]}
"""


def _gateway(name: str, store: str, calls: int) -> None:
    """The whole `firewall.call` through a Gateway whose three stores are on `store`: an
    allowed local read (decision, write-ahead and outcome audit events, the tool) and a
    destructive call under a budget (the same, plus the reservation and its settlement)."""
    from governance import Gateway

    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "policy.yaml"
        policy.write_text(GATEWAY_POLICY, encoding="utf-8")
        with Gateway(state_dir=Path(tmp) / "state", policy_path=policy, store=store) as gateway:
            principal = Principal("ann", "bench", "ops")
            files = gateway.workspace / "files"

            def lookup(n: int) -> Callable[[], Any]:
                call = ToolCall(f"r{n}", "orders.lookup", {"order_id": "ORD-0001"}, "bench-run",
                                principal)  # fmt: skip
                return lambda: gateway.firewall.call(call)

            def delete(n: int) -> Callable[[], Any]:
                (files / f"bench-{n}.txt").write_text("x", encoding="utf-8")  # not timed
                call = ToolCall(f"d{n}", "fs.delete", {"path": f"bench-{n}.txt"}, "bench-run",
                                principal)  # fmt: skip
                return lambda: gateway.firewall.call(call)

            for label, make in (("allowed read", lookup), ("destructive+budget", delete)):
                for n in range(20):
                    result = make(-n - 1)()
                    assert result.outcome == "executed", result
                samples = []
                for n in range(calls):
                    one = make(n)
                    started = time.perf_counter()
                    result = one()
                    samples.append(time.perf_counter() - started)
                    assert result.outcome == "executed", result
                print(f"{name:<22} {'call: ' + label:<24} {calls:>5} calls  "
                      f"{_percentiles(samples)}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--url", help="a PostgreSQL database to use (it is migrated)")
    args = parser.parse_args()

    from governance.stores import (
        PostgresAuditLog,
        PostgresBudgetLedger,
        PostgresTarget,
        migrate_postgres,
    )

    with _server(args.url) as url:
        target = PostgresTarget(url)
        migrate_postgres(target)
        print(f"PostgreSQL {target.display}")
        with PostgresBudgetLedger(target) as ledger:
            _serial("postgres", ledger, None, args.calls)
            with PostgresAuditLog(target) as audit:
                _serial("postgres", ledger, audit, args.calls)
        _gateway("postgres gateway", url, args.calls)
        for same_key in (True, False):
            _threaded("postgres", lambda: PostgresBudgetLedger(target, busy_timeout=60),
                      args.threads, args.calls, same_key=same_key)  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for durability in ("fsync", "os"):
            path = Path(tmp) / f"budgets-{durability}.db"
            with BudgetStore(path, durability=durability) as ledger:  # type: ignore[arg-type]
                _serial(f"sqlite ({durability})", ledger, None, args.calls)
            _threaded(f"sqlite ({durability})",
                      lambda p=path, d=durability: BudgetStore(p, durability=d, busy_timeout=60),
                      args.threads, args.calls, same_key=True)  # fmt: skip
            store = f"sqlite://{tmp}/gw-{durability}?durability={durability}"
            _gateway(f"sqlite gateway ({durability})", store, args.calls)


if __name__ == "__main__":
    main()
