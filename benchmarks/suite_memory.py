"""Max RSS of `proctor run --no-baseline` at 1,000 and 10,000 scenarios: does memory stay flat?

Run: .venv/bin/python benchmarks/suite_memory.py [--sizes 1000 10000] [--jobs 1]
Targets: max RSS at 10,000 <= 150 MB, and within 10% of the max RSS at 1,000. Each size is a
fresh process over a generated suite (benchmarks/_generate.py); results go in RESULTS.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _generate import generate_suite  # noqa: E402
from suite_1000 import PROCTOR, timed  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    found: dict[int, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="proctor-mem-") as tmp:
        workdir = Path(tmp)
        for size in args.sizes:
            suite = generate_suite(workdir / f"suite-{size}", size)
            command = [*PROCTOR, "run", "--no-baseline", "--scenarios", str(suite)]
            command += ["-j", str(args.jobs), "--report-dir", str(workdir / f"report-{size}")]
            wall, rss, code = timed(command, workdir)
            if code != 0:
                raise SystemExit(f"proctor run exited {code} at {size} scenarios")
            found[size] = (wall, rss)
            print(f"{size:>6} scenarios: max RSS {rss:.0f} MB, wall {wall:.1f} s", flush=True)
    small, big = min(found), max(found)
    if small != big:
        growth = found[big][1] / found[small][1] - 1
        print(
            f"RSS at {big} vs {small}: {growth * 100:+.1f}% (target within 10%); "
            f"at {big}: {found[big][1]:.0f} MB (target <= 150 MB)"
        )


if __name__ == "__main__":
    main()
