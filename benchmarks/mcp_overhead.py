"""Overhead of one governed MCP call versus a direct call to the same server.

Both paths use the same stdio session to Proctor's demo MCP server (`stubs.mcp_demo`) and its
`echo` tool; the governed path adds the firewall: schema check, policy decision, output
screening and two audit commits (before the tool and after), in the chosen durability mode.
Target (issue 11): governed minus direct <= 0.5 ms p50 in `os` mode.

Run: .venv/bin/python benchmarks/mcp_overhead.py [--calls N] [--durability os|fsync]
Results are written down in benchmarks/RESULTS.md with the command that produced them.
"""

from __future__ import annotations

import argparse
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
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--durability", choices=("os", "fsync"), default="os")
    args = parser.parse_args()
    principal = Principal("bench", "bench-agent", "bench")
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
            direct: list[float] = []
            governed: list[float] = []
            for n in range(args.calls):
                call = ToolCall(f"c{n}", "mcp.demo.echo", {"text": f"hi {n}"}, "bench", principal)
                t0 = time.perf_counter()
                source.call(call)  # the benchmark measures the source itself, ungoverned
                direct.append((time.perf_counter() - t0) * 1e3)
                t0 = time.perf_counter()
                result = gateway.firewall.call(call)
                governed.append((time.perf_counter() - t0) * 1e3)
                assert result.outcome == "executed", result
    d, g = statistics.median(direct), statistics.median(governed)
    overhead = statistics.median(b - a for a, b in zip(direct, governed, strict=True))
    print(f"calls: {args.calls}, durability: {args.durability}")
    print(f"direct MCP call:   median {d:.2f} ms, p95 {_p95(direct):.2f} ms")
    print(f"governed MCP call: median {g:.2f} ms, p95 {_p95(governed):.2f} ms")
    print(f"overhead: {g - d:.2f} ms (difference of medians), {overhead:.2f} ms (median of pairs)")
    if args.durability == "os":
        verdict = "met" if g - d <= 0.5 else "MISSED"
        print(f"target overhead <= 0.5 ms p50 in os mode: {g - d:.2f} ms -> {verdict}")


def _p95(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.95)]


if __name__ == "__main__":
    main()
