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


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one fresh process. CPU time is the
    steadier figure on a loaded machine; wall is what a CI job waits."""
    start = time.perf_counter()
    child = subprocess.Popen(
        [*PROCTOR, *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert child.stdout is not None
    output = child.stdout.read()
    child.stdout.close()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.stderr.write(output.decode(errors="replace")[-3000:])
        raise SystemExit(f"proctor {' '.join(args[:3])} exited {code}")
    return wall, usage.ru_utime + usage.ru_stime


def measure(name: str, suite: list[str], cwd: Path, shards: int, repeat: int) -> None:
    env = {**os.environ, "PROCTOR_CACHE_DIR": str(cwd / ".cache")}
    out = cwd / "out"
    timed(["run", *suite, "--report-dir", str(out / "warmup")], cwd, env)  # fills the cache
    whole: list[tuple[float, float]] = []
    each: list[list[tuple[float, float]]] = [[] for _ in range(shards)]
    merge: list[tuple[float, float]] = []
    for n in range(repeat):
        whole.append(timed(["run", *suite, "--report-dir", str(out / f"whole-{n}")], cwd, env))
        dirs = []
        for index in range(1, shards + 1):
            target = out / f"shard-{n}-{index}"
            shard = ["--shard", f"{index}/{shards}", "--report-dir", str(target)]
            each[index - 1].append(timed(["run", *suite, *shard], cwd, env))
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

    def med(runs: list[tuple[float, float]]) -> str:
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        return f"{wall:6.2f} s wall, {cpu:6.2f} s CPU"

    walls = [statistics.median(w for w, _ in times) for times in each]
    merge_wall = statistics.median(w for w, _ in merge)
    print(f"{name}: median of {repeat}, fresh processes, warm check cache")
    print(f"  unsharded run: {med(whole)}")
    for index, times in enumerate(each, start=1):
        print(f"  shard {index}/{shards}:     {med(times)}")
    print(f"  merge:         {med(merge)}")
    print(
        f"  sharded pipeline, shards side by side (slowest shard + merge): "
        f"{max(walls) + merge_wall:.2f} s wall"
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
