"""Where `make demo` spends its time, phase by phase, in fresh processes.

Run: .venv/bin/python benchmarks/demo_phases.py [--repeat 5]
To compare with another tree, point PYTHONPATH at it (a `git archive` export) and run this
from that tree's root (the shipped suite and baseline are read from the working directory).

Each repeat is a fresh process doing what `proctor run --baseline baselines/baseline.json`
does, through the same API: import the run path, load + check the shipped suite, read the
baseline, run (the "suite time" of issue 11), score + gate, write the reports. Wall time is
`time.perf_counter()`, CPU is `time.process_time()` of this process; "servers CPU" is the
rusage of the MCP server children, read after they exited. Medians are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ONE_RUN = r"""
import json, resource, sys, time
from pathlib import Path
wall, cpu = {}, {}
def phase(name, w, c):
    wall[name] = time.perf_counter() - w
    cpu[name] = time.process_time() - c
w, c = time.perf_counter(), time.process_time()
from harness._scenario_runner import ProviderChoice
from harness._suite import assemble, exit_code, load_checked_suite, run_checked_suite
from harness.cli._eval_common import baseline_from_file
from harness.reports import write_reports
phase("imports", w, c)
report = Path(sys.argv[1])
w, c = time.perf_counter(), time.process_time()
scenarios = load_checked_suite([Path("scenarios")])
baseline, traces = baseline_from_file(Path("baselines/baseline.json"))
phase("load + check", w, c)
w, c = time.perf_counter(), time.process_time()
run = run_checked_suite(scenarios, provider=ProviderChoice(), trace_dir=report / "traces")
phase("run", w, c)
w, c = time.perf_counter(), time.process_time()
result = assemble(run.run_id, scenarios, run.traces, baseline=baseline, baseline_traces=traces)
phase("score + gate", w, c)
w, c = time.perf_counter(), time.process_time()
write_reports(result, report)
phase("reports", w, c)
import threading
for thread in threading.enumerate():
    if thread is not threading.main_thread():
        thread.join()  # the servers are stopped in the background while the suite is scored
children = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "cpu": cpu, "servers": children.ru_utime + children.ru_stime,
                  "exit": exit_code(result)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    runs: list[dict[str, Any]] = []
    loads: list[float] = []
    with tempfile.TemporaryDirectory(prefix="proctor-demo-") as scratch:
        for n in range(args.repeat):
            loads.append(os.getloadavg()[0])
            out = subprocess.run(
                [sys.executable, "-c", ONE_RUN, str(Path(scratch) / f"report-{n}")],
                check=True, capture_output=True, text=True, env=os.environ.copy(),
            )  # fmt: skip
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    exits = sorted({run["exit"] for run in runs})
    print(f"make demo, median of {args.repeat} fresh processes (exit codes {exits}):")
    print(f"  {'phase':<14} {'wall':>8} {'CPU':>8}")
    for name in runs[0]["wall"]:
        w = statistics.median(run["wall"][name] for run in runs)
        c = statistics.median(run["cpu"][name] for run in runs)
        print(f"  {name:<14} {w:7.2f}s {c:7.2f}s")
    servers = statistics.median(run["servers"] for run in runs)
    print(f"  MCP servers' CPU (children) {servers:.2f} s")
    each = ", ".join(f"{run['wall']['run']:.2f}" for run in runs)
    print(f"  run phase, each: {each} s")
    print(f"  load average before each: {', '.join(f'{x:.1f}' for x in loads)}")

if __name__ == "__main__":
    main()
