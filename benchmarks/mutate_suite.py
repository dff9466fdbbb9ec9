"""Wall time and counts of `proctor mutate` on the shipped suite (every policy in scope).

Run: .venv/bin/python benchmarks/mutate_suite.py [--jobs N]
Results are written down in benchmarks/RESULTS.md with the command that produced them.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from harness._mutants_file import DEFAULT_MUTANTS_FILE, load_equivalents
from harness._mutate_run import mutate_suite
from harness._suite import load_checked_suite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--scenarios", type=Path, default=Path("scenarios"))
    args = parser.parse_args()

    scenarios = load_checked_suite([args.scenarios])
    t0 = time.perf_counter()
    results = mutate_suite(
        scenarios, only=None, equivalents=load_equivalents(DEFAULT_MUTANTS_FILE), jobs=args.jobs
    )
    wall = time.perf_counter() - t0
    verdicts = Counter(r.verdict for r in results)
    print(f"scenarios: {len(scenarios)}; mutants: {len(results)}; -j {args.jobs}: {wall:.1f} s")
    for policy in sorted({r.policy_file for r in results}):
        mine = Counter(r.verdict for r in results if r.policy_file == policy)
        print(f"  {policy}: {sum(mine.values())} mutants, {dict(sorted(mine.items()))}")
    print(f"total: {dict(sorted(verdicts.items()))}")


if __name__ == "__main__":
    main()
