"""Overhead of one governed MCP call versus a direct call to the same server.

Both paths use the same stdio session to Proctor's demo MCP server (`stubs.mcp_demo`) and its
`echo` tool; the governed path adds the firewall: schema check, policy decision, output
screening and two audit commits (before the tool and after), in the chosen durability mode.
Target (issue 11): governed minus direct <= 0.5 ms p50 in `os` mode.

The calls are paired and interleaved (a direct and a governed call with the same arguments,
which goes first alternating pair by pair, so neither path always follows the other), after
`--warmup` pairs that are not counted. Two figures: the difference of the two medians and the
median of the per-pair differences; the verdict takes the larger. The load average is printed
before and after: on a shared machine, compare runs only at similar load.

Run: .venv/bin/python benchmarks/mcp_overhead.py [--calls N] [--warmup N] [--durability os|fsync]
Results are written down in benchmarks/RESULTS.md with the command that produced them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from governance import Gateway, Principal, ToolCall

CONFIG = """\
version: 1
servers:
  demo:
    transport: stdio
    command: python
    args: ["-m", "stubs.mcp_demo"]
    tools:
      echo:
        action_type: read
        risk: low
        reversible: true
        external_side_effect: false
        idempotent: true
"""
POLICY = """\
version: 1
rules:
  - {id: demo-echo, effect: allow, match: {tool: mcp.demo.echo}}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300, help="counted pairs")
    parser.add_argument("--warmup", type=int, default=50, help="pairs run first, not counted")
    parser.add_argument("--durability", choices=("os", "fsync"), default="os")
    args = parser.parse_args()
    principal = Principal("bench", "bench-agent", "bench")
    load_before = _load()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "servers.yaml").write_text(CONFIG)
        (root / "policy.yaml").write_text(POLICY)
        with Gateway(
            state_dir=root / "state",
            policy_path=root / "policy.yaml",
            mcp_config=root / "servers.yaml",
            durability=args.durability,
        ) as gateway:
            # The gateway shows its MCP sources read-only; the registry holds the live one.
            source = gateway.firewall.registry._source_for("mcp.demo.echo")
            assert source is not None

            def direct(call: ToolCall) -> tuple[float, float]:
                c0, t0 = time.thread_time(), time.perf_counter()
                result = source.call(call)  # the source itself, ungoverned
                elapsed = (time.perf_counter() - t0) * 1e3
                cpu = (time.thread_time() - c0) * 1e3
                assert result.outcome == "executed", result
                return elapsed, cpu

            def governed(call: ToolCall) -> tuple[float, float]:
                c0, t0 = time.thread_time(), time.perf_counter()
                result = gateway.firewall.call(call)
                elapsed = (time.perf_counter() - t0) * 1e3
                cpu = (time.thread_time() - c0) * 1e3
                assert result.outcome == "executed", result
                return elapsed, cpu

            pairs: list[tuple[float, float]] = []
            cpu_pairs: list[tuple[float, float]] = []
            for n in range(args.warmup + args.calls):
                call = ToolCall(f"c{n}", "mcp.demo.echo", {"text": f"hi {n}"}, "bench", principal)
                if n % 2:
                    d, d_cpu = direct(call)
                    g, g_cpu = governed(call)
                else:
                    g, g_cpu = governed(call)
                    d, d_cpu = direct(call)
                if n >= args.warmup:
                    pairs.append((d, g))
                    cpu_pairs.append((d_cpu, g_cpu))
    load_after = _load()
    direct_ms = [d for d, _ in pairs]
    governed_ms = [g for _, g in pairs]
    d_p50, g_p50 = statistics.median(direct_ms), statistics.median(governed_ms)
    of_medians = g_p50 - d_p50
    of_pairs = statistics.median(g - d for d, g in pairs)
    print(f"calls: {args.calls} pairs (+{args.warmup} warm-up), durability: {args.durability}")
    print(f"load average: {load_before} before, {load_after} after")
    print(f"direct MCP call:   median {d_p50:.2f} ms, p95 {_p95(direct_ms):.2f} ms")
    print(f"governed MCP call: median {g_p50:.2f} ms, p95 {_p95(governed_ms):.2f} ms")
    print(f"overhead: {of_medians:.2f} ms (difference of medians), ", end="")
    print(f"{of_pairs:.2f} ms (median of pairs)")
    # CPU time of the calling thread: what the firewall itself costs, whatever else the
    # machine runs meanwhile (the MCP exchange is the same work on both paths).
    cpu = statistics.median(g - d for d, g in cpu_pairs)
    print(f"overhead in the calling thread's CPU time: {cpu:.2f} ms (median of pairs)")
    if args.durability == "os":
        worse = max(of_medians, of_pairs)
        verdict = "met" if worse <= 0.5 else "MISSED"
        print(f"target overhead <= 0.5 ms p50 in os mode: {worse:.2f} ms -> {verdict}")


def _load() -> str:
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def _p95(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.95)]


if __name__ == "__main__":
    main()
