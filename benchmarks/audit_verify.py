"""Audit chain verification speed: events/s in process and through `proctor audit verify`.

Run: .venv/bin/python benchmarks/audit_verify.py [--events N] [--run-size M] [--repeat R]
Memory: ... --events 1000000 --run-size 1000000 --alg sha256 (one run of 1M events)
Results are written down in benchmarks/RESULTS.md with the command that produced them.

Builds two logs of N events with the real `AuditLog` (SQLite file, `os` durability so building
is quick; verification reads the same file whatever the mode): one unkeyed (sha256), one keyed
(hmac-sha256 via PROCTOR_AUDIT_KEY), in runs of M events with firewall-shaped payloads. Then
times `AuditLog.verify_all()` in process, and the CLI end to end in a fresh process (imports,
open, verify, print the table), reporting its max RSS too. The logs are kept in --dir and
reused when they already hold N events.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from governance.core import ManualClock
from governance.stores import KEY_ENV, AuditLog

TARGET = 200_000  # events/s, issue 11
KEY = "bench-audit-key"


def _payloads(run: int, n: int) -> list[tuple[str, dict[str, Any]]]:
    """One governed call's four events: requested, decided, started, completed."""
    call = f"call-{run}-{n}"
    digest = "sha256:" + f"{run:08x}{n:08x}" * 4
    return [
        ("tool.requested", {
            "call_id": call, "tool": "orders.lookup", "arguments": {"order_id": f"A-{n:05d}"},
            "arguments_digest": digest, "usage": {"calls": n, "cost_usd": 0.0125 * n},
        }),
        ("policy.decided", {
            "call_id": call, "decision": "allow", "rule_id": "orders-read",
            "reason": "read-only order lookups are allowed", "approval": None,
        }),
        ("execution.started", {"call_id": call, "tool": "orders.lookup"}),
        ("tool.completed", {
            "call_id": call, "status": "ok", "elapsed_ms": 3,
            "output": {"order_id": f"A-{n:05d}", "status": "shipped", "total": "19.90 EUR"},
        }),
    ]  # fmt: skip


def _count(path: Path) -> int:
    if not path.is_file():
        return 0
    with closing(sqlite3.connect(path)) as conn:
        try:
            return int(conn.execute("SELECT count(*) FROM audit_events").fetchone()[0])
        except sqlite3.Error:
            return 0


def build(path: Path, *, events: int, run_size: int, key: bytes | None) -> None:
    if _count(path) == events:
        return
    for leftover in path.parent.glob(path.name + "*"):
        leftover.unlink()
    started = time.perf_counter()
    with AuditLog(path, key=key, clock=ManualClock(), durability="os") as log:
        written, run = 0, 0
        while written < events:
            size = min(run_size, events - written)
            for start in range(0, size, 1000):  # one transaction per 1,000 events
                batch = [
                    _payloads(run, n // 4)[n % 4] for n in range(start, min(size, start + 1000))
                ]
                log.append_many(f"run-{run:06d}", batch)
            written, run = written + size, run + 1
    print(f"built {path.name}: {events} events in {time.perf_counter() - started:.1f} s")


def _in_process(path: Path, key: bytes | None, repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of `verify_all()` (CPU: what it costs without the queue
    for a core on a shared machine)."""
    walls, cpus = [], []
    for _ in range(repeat):
        with AuditLog(path, key=key, readonly=True) as log:
            started, cpu = time.perf_counter(), time.process_time()
            verdicts = log.verify_all()
            walls.append(time.perf_counter() - started)
            cpus.append(time.process_time() - cpu)
        assert all(v.ok for v in verdicts), [v for v in verdicts if not v.ok][:1]
    return statistics.median(walls), statistics.median(cpus)


def _proctor() -> list[str]:
    script = Path(sys.executable).with_name("proctor")
    return [str(script)] if script.exists() else [sys.executable, "-m", "harness"]


def _cli(path: Path, key: bytes | None, repeat: int) -> tuple[float, float]:
    """Median wall seconds and max RSS (MB) of `proctor audit verify DB`, fresh processes."""
    env = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    if key:
        env[KEY_ENV] = key.decode()
    walls, rss = [], 0.0
    for _ in range(repeat):
        started = time.perf_counter()
        child = subprocess.Popen(
            [*_proctor(), "audit", "verify", str(path)], env=env, stdout=subprocess.DEVNULL
        )
        _, status, usage = os.wait4(child.pid, 0)
        walls.append(time.perf_counter() - started)
        child.returncode = os.waitstatus_to_exitcode(status)
        assert child.returncode == 0, f"proctor audit verify exited {child.returncode}"
        rss = max(rss, usage.ru_maxrss / 1024)
    return statistics.median(walls), rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--run-size", type=int, default=200, help="events per run (chain)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--alg", choices=("sha256", "hmac-sha256"), action="append",
                        help="only these logs (default: both)")  # fmt: skip
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "proctor-bench")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| log | events | in process, wall | in process, CPU | CLI end to end, wall "
          "| CLI max RSS | target | met (wall) |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, key in (("sha256", None), ("hmac-sha256", KEY.encode())):
        if args.alg and label not in args.alg:
            continue
        path = args.dir / f"audit-{label}-{args.events}-{args.run_size}.db"
        build(path, events=args.events, run_size=args.run_size, key=key)
        inner, cpu = _in_process(path, key, args.repeat)
        wall, rss = _cli(path, key, args.repeat)
        rate, cli_rate = args.events / inner, args.events / wall
        print(
            f"| {label} | {args.events:,} | {rate:,.0f} events/s ({inner:.3f} s) "
            f"| {args.events / cpu:,.0f} events/CPU-s ({cpu:.3f} s) "
            f"| {cli_rate:,.0f} events/s ({wall:.3f} s) | {rss:.0f} MB "
            f"| ≥ {TARGET:,} events/s | {'yes' if min(rate, cli_rate) >= TARGET else 'no'} |"
        )


if __name__ == "__main__":
    main()
