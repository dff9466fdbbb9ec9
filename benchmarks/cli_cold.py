"""Cold start of the `proctor` CLI: wall and CPU time of fresh processes, median of N.

Run: .venv/bin/python benchmarks/cli_cold.py [--runs N]   (from the repository root)
Results are written down in benchmarks/RESULTS.md with the command that produced them.

Every row is a new interpreter (nothing imported, nothing cached but the OS page cache and
.pyc files), which is what a user typing the command or a CI step pays. CPU is user + system
time of the child: on a shared machine wall time includes waiting for a core, CPU does not.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
POLICY = "governance/data/default_policy.yaml"


def _proctor() -> list[str]:
    script = Path(sys.executable).with_name("proctor")
    return [str(script)] if script.exists() else [sys.executable, "-m", "harness"]


def _without_mcp() -> list[str]:
    """The shipped suite minus its MCP scenarios (checked from their pin files, no server)."""
    args: list[str] = []
    for path in sorted((REPO / "scenarios").glob("*.yaml")):
        args += ["--scenarios", str(path.relative_to(REPO))]
    return args


# label, arguments, target wall seconds (None: for reference only)
CASES: list[tuple[str, list[str], float | None]] = [
    ("python -c pass (interpreter floor)", [], None),
    ("proctor --help", ["--help"], 0.3),
    ("proctor check --help", ["check", "--help"], 0.3),
    (f"proctor policy check {POLICY}", ["policy", "check", POLICY], 0.3),
    ("proctor check (shipped suite, no MCP files)", ["check", *_without_mcp()], 0.6),
    ("proctor check (shipped suite)", ["check"], 0.6),
]


def _one(command: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr.decode()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {args.runs} runs each")
    print(f"{'command':<58} {'wall p50':>9} {'cpu p50':>8} {'target':>7}  met")
    for label, arguments, target in CASES:
        command = [sys.executable, "-c", "pass"] if not arguments else _proctor() + arguments
        _one(command)  # warm the page cache and .pyc files: every later run is still cold
        walls, cpus = zip(*(_one(command) for _ in range(args.runs)), strict=True)
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        shown = "-" if target is None else f"{target:.1f} s"
        verdict = "" if target is None else ("yes" if wall <= target else "NO")
        print(f"{label:<58} {wall:8.3f}s {cpu:7.3f}s {shown:>7}  {verdict}")


if __name__ == "__main__":
    main()
