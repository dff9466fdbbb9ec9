"""AgentDojo's four suites in replay: how long the import, the governed runs and AgentDojo's
own checks take, per suite, and the whole CLI run serial and with -j 2.

Run: .venv/bin/python benchmarks/agentdojo_suites.py [--policy FILE]   (needs `make agentdojo`)
Results are written down in benchmarks/RESULTS.md with the command that produced them.

The run phase is split into the governed loop (Proctor: firewall, policy, audit, trace) and
AgentDojo's utility/security checks (its own code: most of them DeepDiff the whole environment
before and after), timed by wrapping the one function that calls them.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=ROOT,
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--policy", type=Path, default=None, help="what-if policy (--policy)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "agentdojo"
        import_s = _cli("import", "agentdojo", "--out", str(out))

        import harness._agentdojo_run as run_module
        from harness._scenario_runner import ProviderChoice, run_scenario
        from harness._suite import load_checked_suite

        start = time.perf_counter()
        override = {"policy_override": args.policy} if args.policy else {}
        scenarios = [s for s in load_checked_suite([out], **override) if s.scenario.script]
        load_s = time.perf_counter() - start

        judged: dict[str, float] = defaultdict(float)
        total: dict[str, float] = defaultdict(float)
        count: dict[str, int] = defaultdict(int)
        original = run_module.judge
        suite_now = [""]

        def timed_judge(*a, **k):  # type: ignore[no-untyped-def]
            t = time.perf_counter()
            try:
                return original(*a, **k)
            finally:
                judged[suite_now[0]] += time.perf_counter() - t

        run_module.judge = timed_judge  # type: ignore[assignment]  # where the runner calls it
        for loaded in scenarios:
            task = loaded.scenario.agentdojo
            assert task is not None
            suite_now[0] = task.suite
            t = time.perf_counter()
            run_scenario(loaded, run_id="bench", provider=ProviderChoice())
            total[task.suite] += time.perf_counter() - t
            count[task.suite] += 1

        policy = ["--policy", str(args.policy)] if args.policy else []
        runs = ["run", "--scenarios", str(out), "--no-baseline", *policy]
        serial_s = _cli(*runs, "--report-dir", str(Path(scratch) / "r1"))
        parallel_s = _cli(*runs, "-j", "2", "--report-dir", str(Path(scratch) / "r2"))

    print(f"proctor import agentdojo (all four suites): {import_s:.1f} s wall")
    print(f"load + contract check of {len(scenarios)} replayable scenarios: {load_s:.1f} s")
    print("suite      scenarios  run phase  of which AgentDojo's checks  governed loop a scenario")
    for suite in sorted(total):
        loop_ms = (total[suite] - judged[suite]) / count[suite] * 1000
        print(
            f"{suite:<10} {count[suite]:>9}  {total[suite]:>8.1f}s  {judged[suite]:>26.1f}s"
            f"  {loop_ms:>23.1f} ms"
        )
    all_s, checks_s = sum(total.values()), sum(judged.values())
    print(f"all        {sum(count.values()):>9}  {all_s:>8.1f}s  {checks_s:>26.1f}s")
    print(
        f"proctor run (whole command, imports and reports): serial {serial_s:.1f} s, -j 2 "
        f"{parallel_s:.1f} s"
    )


if __name__ == "__main__":
    main()
