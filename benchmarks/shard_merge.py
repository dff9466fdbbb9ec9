"""Sharded runs: the wall time of each `proctor run --shard I/N` and of `proctor merge`, beside
the unsharded run, for the shipped suite and for a generated 1,000-scenario suite.

Run: .venv/bin/python benchmarks/shard_merge.py [--shards 3] [--count 1000] [--repeat 3]

Each command is a fresh process (as a CI job runs it), gated against a baseline (the shipped
one; for the generated suite, one recorded first), with a warm check cache (filled by an
unmeasured run). The shards run one after the other here; in CI they run side by side, so a
sharded pipeline takes the slowest shard plus the merge. The merged report.json is checked to
be the unsharded run's (the same run id given to the merge). Results go in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _generate import generate_suite  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROCTOR = [sys.executable, "-c", "from harness.cli import main; main()"]


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([*PROCTOR, *args], cwd=cwd, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.stderr.write(done.stdout.decode(errors="replace")[-3000:])
        raise SystemExit(f"proctor {' '.join(args[:3])} exited {done.returncode}")
    return wall


def measure(name: str, suite: list[str], cwd: Path, shards: int, repeat: int) -> None:
    env = {**os.environ, "PROCTOR_CACHE_DIR": str(cwd / ".cache")}
    out = cwd / "out"
    timed(["run", *suite, "--report-dir", str(out / "warmup")], cwd, env)  # fills the cache
    whole: list[float] = []
    each: list[list[float]] = [[] for _ in range(shards)]
    merge: list[float] = []
    for n in range(repeat):
        whole.append(timed(["run", *suite, "--report-dir", str(out / f"whole-{n}")], cwd, env))
        dirs = []
        for index in range(1, shards + 1):
            target = out / f"shard-{n}-{index}"
            each[index - 1].append(
                timed(
                    ["run", *suite, "--shard", f"{index}/{shards}", "--report-dir", str(target)],
                    cwd,
                    env,
                )  # fmt: skip
            )
            dirs.append(str(target))
        run_id = json.loads((out / f"whole-{n}" / "report.json").read_text())["run_id"]
        merged = out / f"merged-{n}"
        merge.append(
            timed(["merge", *dirs, "--report-dir", str(merged), "--run-id", run_id], cwd, env)
        )
        same = (merged / "report.json").read_bytes() == (
            out / f"whole-{n}" / "report.json"
        ).read_bytes()
        if not same:
            raise SystemExit("the merged report.json differs from the unsharded run's")
    med = statistics.median
    shard_walls = [med(times) for times in each]
    print(f"{name}: median of {repeat}, fresh processes, warm check cache")
    print(f"  unsharded run:              {med(whole):.2f} s")
    for index, wall in enumerate(shard_walls, start=1):
        print(f"  shard {index}/{shards}:                  {wall:.2f} s")
    print(f"  merge:                      {med(merge):.2f} s")
    print(
        f"  sharded pipeline (slowest shard + merge, shards side by side): "
        f"{max(shard_walls) + med(merge):.2f} s; all shards one after another + merge: "
        f"{sum(shard_walls) + med(merge):.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shards", type=int, default=3)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="proctor-shard-bench-") as tmp:
        shipped = Path(tmp) / "shipped"
        shutil.copytree(ROOT / "scenarios", shipped / "scenarios")
        shutil.copytree(ROOT / "baselines", shipped / "baselines")
        measure("shipped suite", [], shipped, args.shards, args.repeat)
        big = Path(tmp) / "big"
        generate_suite(big / "suite", args.count)
        baseline = big / "baseline" / "baseline.json"
        env = {**os.environ, "PROCTOR_CACHE_DIR": str(big / ".cache")}
        timed(["baseline", "record", "--reason", "bench", "--scenarios", str(big / "suite"),
               "--baseline", str(baseline)], big, env)  # fmt: skip
        suite = ["--scenarios", str(big / "suite"), "--baseline", str(baseline)]
        measure(f"{args.count}-scenario suite", suite, big, args.shards, args.repeat)


if __name__ == "__main__":
    main()
