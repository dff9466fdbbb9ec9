"""Wall time of the shipped scenario suite, and what one scenario costs.

Run: .venv/bin/python benchmarks/suite_run.py [--repeat N]
Results are written down in benchmarks/RESULTS.md with the command that produced them.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from harness._scenario_runner import ProviderChoice, run_scenario
from harness._suite import load_checked_suite, run_checked_suite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scenarios", type=Path, default=Path("scenarios"))
    args = parser.parse_args()

    t0 = time.perf_counter()
    scenarios = load_checked_suite([args.scenarios])
    load_s = time.perf_counter() - t0

    per_scenario: dict[str, list[float]] = {s.scenario.id: [] for s in scenarios}
    for _ in range(args.repeat):
        for loaded in scenarios:
            t = time.perf_counter()
            run_scenario(loaded, run_id="bench", provider=ProviderChoice())
            per_scenario[loaded.scenario.id].append(time.perf_counter() - t)

    walls: dict[int, list[float]] = {1: [], 2: []}
    for jobs in (1, 2):
        for _ in range(args.repeat):
            t = time.perf_counter()
            run_checked_suite(scenarios, provider=ProviderChoice(), jobs=jobs)
            walls[jobs].append(time.perf_counter() - t)

    medians = sorted((statistics.median(v), k) for k, v in per_scenario.items())
    print(f"scenarios: {len(scenarios)}; load + contract check: {load_s * 1000:.0f} ms")
    for jobs, values in walls.items():
        print(f"suite wall time, -j {jobs}: median {statistics.median(values):.2f} s")
    all_medians = [m for m, _ in medians]
    print(
        f"per scenario: median {statistics.median(all_medians) * 1000:.0f} ms, "
        f"min {medians[0][0] * 1000:.0f} ms ({medians[0][1]}), "
        f"max {medians[-1][0] * 1000:.0f} ms ({medians[-1][1]})"
    )


if __name__ == "__main__":
    main()
