"""Cost of one governed call: policy decision + write-ahead audit appends + a trivial tool.

Run: .venv/bin/python benchmarks/firewall_call.py [--calls N]
Results are written down in benchmarks/RESULTS.md with the command that produced them.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from governance import PolicyContext, Principal, ToolCall, ToolRegistry
from governance._audit import AuditLog
from governance._firewall import Firewall, StaticPolicy
from governance._policy_eval import evaluate
from governance._policy_load import load_policy
from governance.tools import builtin_tools
from harness.cli._options import shipped_policy_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        registry = ToolRegistry([builtin_tools(workspace)])
        policy = load_policy(shipped_policy_path())
        principal = Principal("bench", "bench-agent", "bench-team")

        call = ToolCall("c0", "orders.lookup", {"order_id": "ORD-0001"}, "bench", principal)
        context = PolicyContext.for_call(
            call, registry.get(call.tool), registry_digest=registry.digest
        )
        start = time.perf_counter()
        for _ in range(args.calls):
            evaluate(context, policy)
        decide_us = (time.perf_counter() - start) / args.calls * 1e6

        with AuditLog(workspace / "audit.sqlite") as audit:
            firewall = Firewall(registry, StaticPolicy(policy), audit)
            samples = {"allowed (orders.lookup)": [], "blocked (fs.delete)": []}
            for n in range(args.calls):
                for label, tool, arguments in (
                    ("allowed (orders.lookup)", "orders.lookup", {"order_id": "ORD-0001"}),
                    ("blocked (fs.delete)", "fs.delete", {"path": "notes/todo.txt"}),
                ):
                    one = ToolCall(f"c{n}", tool, arguments, f"bench-{label[:3]}", principal)
                    t0 = time.perf_counter()
                    firewall.call(one)
                    samples[label].append((time.perf_counter() - t0) * 1e6)

    print(f"calls per case: {args.calls}")
    print(f"policy evaluate only: {decide_us:.1f} us/call")
    for label, values in samples.items():
        values.sort()
        print(
            f"{label}: median {statistics.median(values):.0f} us, "
            f"p95 {values[int(len(values) * 0.95)]:.0f} us"
        )


if __name__ == "__main__":
    main()
