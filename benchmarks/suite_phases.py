"""Where a serial 1,000-scenario run spends its CPU, phase by phase, in one fresh process.

Run: .venv/bin/python benchmarks/suite_phases.py [--count 1000] [--repeat 3]
To compare with another tree, point PYTHONPATH at it (a `git archive` export): the script
imports `harness` from wherever Python finds it first.

Each repeat is a fresh process doing what `proctor run --no-baseline` does, through the same
API: import the run path, load + check the generated suite (benchmarks/_generate.py), run it
with traces streamed to the report directory, score (assemble), write the reports. CPU is
`time.process_time()` (user + system of this process); the median of the repeats is printed.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _generate import ISSUE_11_FILES, generate_suite  # noqa: E402

ONE_RUN = r"""
import json, sys, time
from pathlib import Path
cpu = {}
t = time.process_time()
from harness._scenario_runner import ProviderChoice
from harness._suite import assemble, load_checked_suite, run_checked_suite
from harness.reports import write_reports
cpu["imports"] = time.process_time() - t
suite, report = Path(sys.argv[1]), Path(sys.argv[2])
t = time.process_time()
scenarios = load_checked_suite([suite])
cpu["load + check"] = time.process_time() - t
t = time.process_time()
run = run_checked_suite(scenarios, provider=ProviderChoice(), run_id="run-bench",
                        trace_dir=report / "traces")
cpu["run"] = time.process_time() - t
t = time.process_time()
result = assemble(run.run_id, scenarios, run.traces)
cpu["score"] = time.process_time() - t
t = time.process_time()
write_reports(result, report)
cpu["reports"] = time.process_time() - t
print(json.dumps(cpu))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument(
        "--issue-11-mix",
        action="store_true",
        help="replicate only the scenario files issue 11 was measured on (like with like)",
    )
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="proctor-phases-") as scratch:
        only = ISSUE_11_FILES if args.issue_11_mix else None
        suite = generate_suite(Path(scratch) / "suite", args.count, only=only)
        runs: list[dict[str, float]] = []
        for n in range(args.repeat):
            report = Path(scratch) / f"report-{n}"
            out = subprocess.run(
                [sys.executable, "-c", ONE_RUN, str(suite), str(report)],
                check=True, capture_output=True, text=True, env=os.environ.copy(),
            )  # fmt: skip
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{args.count} scenarios, median of {args.repeat} fresh processes (CPU seconds):")
    total = 0.0
    for phase in runs[0]:
        value = statistics.median(run[phase] for run in runs)
        total += value
        print(f"  {phase:<14} {value:6.2f} s")
    print(f"  {'total':<14} {total:6.2f} s   (load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
