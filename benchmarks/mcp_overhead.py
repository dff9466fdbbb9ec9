"""Overhead of one governed MCP call versus a direct call to the same server.

Both paths use the same stdio session to Proctor's demo MCP server (`stubs.mcp_demo`) and its
`echo` tool; the governed path adds the firewall: schema check, policy decision and four
fsync'd audit appends.

Run: .venv/bin/python benchmarks/mcp_overhead.py [--calls N]
Results are written down in benchmarks/RESULTS.md with the command that produced them.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from governance import Principal, ToolCall
from governance._gateway import Gateway

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
        ) as gateway:
            source = gateway.mcp_sources[0]
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
    print(f"calls: {args.calls}")
    print(f"direct MCP call:   median {d:.2f} ms, p95 {_p95(direct):.2f} ms")
    print(f"governed MCP call: median {g:.2f} ms, p95 {_p95(governed):.2f} ms")
    print(f"overhead: median {g - d:.2f} ms per call")



def _p95(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.95)]


if __name__ == "__main__":
    main()
