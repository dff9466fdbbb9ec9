"""1,000 replay scenarios end to end, beside inspect_ai's mockllm on 1,000 comparable samples.

Run: .venv/bin/python benchmarks/suite_1000.py [--count 1000] [--repeat 1] [--no-peer]
Needs the `bench` extra for the peer: .venv/bin/pip install -e '.[bench]'.

Proctor: the shipped non-MCP scenarios replicated with new ids into a temporary directory
(benchmarks/_generate.py), then `proctor run --no-baseline` as a fresh process, serial and
`-j 2`: load, schema and contract check, run, score, reports, exit code. Wall time of the
whole process, and its max RSS.

inspect_ai: one task of 1,000 samples, each two model turns (a tool call to an in-memory
order lookup, then an answer), mockllm scripted by a function, usage set on every output (so
nothing reaches for a tokenizer download), an `includes()` scorer, logs to a temporary
directory; also a fresh process, timed the same way. Results go in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _generate import ISSUE_11_FILES, generate_suite  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROCTOR = [sys.executable, "-c", "from harness.cli import main; main()"]


def timed(
    command: list[str], cwd: Path, env: dict[str, str] | None = None
) -> tuple[float, float, int]:
    """(wall seconds, max RSS MB, exit code) of one fresh process (wait4: that child alone,
    with the largest of the workers it waited for)."""
    start = time.perf_counter()
    child = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert child.stdout is not None
    output = child.stdout.read()
    child.stdout.close()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.stderr.write(output.decode(errors="replace")[-3000:])
    return wall, usage.ru_maxrss / 1024, code


def proctor_runs(
    count: int, repeat: int, jobs: int, workdir: Path, *, warm: bool, only: tuple[str, ...] | None
) -> list[tuple[float, float]]:
    """`warm`: the check cache already holds the suite (a second run of an unchanged suite, as
    a user re-running locally has); cold: an empty cache (a fresh CI machine)."""
    suite = workdir / f"suite-{count}"
    if not suite.exists():
        generate_suite(suite, count, only=only)
    results = []
    for n in range(repeat):
        label = "warm" if warm else f"cold-j{jobs}-{n}"
        env = {**os.environ, "PROCTOR_CACHE_DIR": str(workdir / f"cache-{label}")}
        command = [*PROCTOR, "run", "--no-baseline", "--scenarios", str(suite), "-j", str(jobs)]
        command += ["--report-dir", str(workdir / f"report-{count}-j{jobs}-{label}-{n}")]
        if warm and not (workdir / "cache-warm").exists():
            timed(command, workdir, env)  # fills the cache; not measured
        wall, rss, code = timed(command, workdir, env)
        if code != 0:
            raise SystemExit(f"proctor run exited {code}; the generated suite should be clean")
        results.append((wall, rss))
    return results


INSPECT_SCRIPT = r"""
import sys, tempfile
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import tool

ORDERS = {f"ORD-{n:04d}": {"status": "shipped", "total": 10.0 + n} for n in range(1, 9)}

@tool
def orders_lookup():
    async def execute(order_id: str) -> str:
        '''Look up one order by id.

        Args:
            order_id: Order id, like ORD-0001.
        '''
        order = ORDERS[order_id]
        return f"{order_id}: {order['status']}, total {order['total']}"
    return execute

USAGE = ModelUsage(input_tokens=20, output_tokens=10, total_tokens=30)

def script(messages, tools, tool_choice, config):
    last = messages[-1]
    if last.role == "tool":
        output = ModelOutput.from_content("mockllm/model", f"The order is {last.text}")
    else:
        order = "ORD-%04d" % (1 + int(messages[-1].text.split()[-1]) % 8)
        output = ModelOutput.for_tool_call("mockllm/model", "orders_lookup", {"order_id": order})
    output.usage = USAGE
    return output

count = int(sys.argv[1])
samples = [Sample(input=f"What is the status of order {n}", target="shipped") for n in range(count)]
task = Task(dataset=samples, solver=[use_tools(orders_lookup()), generate()], scorer=includes())
model = get_model("mockllm/model", custom_outputs=script)
with tempfile.TemporaryDirectory() as logs:
    [log] = eval(task, model=model, log_dir=logs, display="none")
accuracy = log.results.scores[0].metrics["accuracy"].value
assert log.status == "success" and accuracy == 1.0, (log.status, accuracy)
"""


def inspect_runs(count: int, repeat: int, workdir: Path) -> list[tuple[float, float]]:
    results = []
    for _ in range(repeat):
        wall, rss, code = timed([sys.executable, "-c", INSPECT_SCRIPT, str(count)], workdir)
        if code != 0:
            raise SystemExit(f"the inspect_ai run exited {code}")
        results.append((wall, rss))
    return results


def _median(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(w for w, _ in runs), max(r for _, r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument(
        "--issue-11-mix",
        action="store_true",
        help="replicate only the scenario files issue 11 was measured on (like with like)",
    )
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--no-peer", action="store_true", help="skip inspect_ai")
    args = parser.parse_args()
    only = ISSUE_11_FILES if args.issue_11_mix else None
    env_note = f"PYTHONHASHSEED={os.environ.get('PYTHONHASHSEED', 'random')}"
    with tempfile.TemporaryDirectory(prefix="proctor-bench-") as tmp:
        workdir = Path(tmp)
        rows = {
            (jobs, warm): _median(
                proctor_runs(args.count, args.repeat, jobs, workdir, warm=warm, only=only)
            )
            for jobs in (1, 2)
            for warm in (False, True)
        }
        peer = None if args.no_peer else _median(inspect_runs(args.count, args.repeat, workdir))
    mix = "issue 11's scenario files" if only else "every shipped non-MCP scenario file"
    print(f"{args.count} scenarios ({mix}), {args.repeat} run(s) each, median wall; {env_note}")
    for (jobs, warm), (wall, rss) in rows.items():
        target = 3 if jobs == 1 else 2
        how = "serial" if jobs == 1 else "-j 2  "
        cache = "warm check cache" if warm else "cold check cache"
        print(
            f"proctor run --no-baseline, {how}, {cache}: {wall:.2f} s (target <= {target} s), "
            f"max RSS {rss:.0f} MB, {wall / args.count * 1000:.2f} ms a scenario"
        )
    if peer is not None:
        print(
            f"inspect_ai mockllm, {args.count} two-turn tool samples: {peer[0]:.2f} s, "
            f"max RSS {peer[1]:.0f} MB"
        )
        for (jobs, warm), (wall, _) in rows.items():
            how = f"{'serial' if jobs == 1 else '-j 2'}, {'warm' if warm else 'cold'}"
            print(f"speed-up over inspect_ai, {how}: {peer[0] / wall:.1f}x (target >= 25x)")


if __name__ == "__main__":
    main()
