"""Cost of one governed call: policy decision + write-ahead audit appends + a trivial tool.

Per store backend: the SQLite files in `fsync` and `os` durability, and the ephemeral memory
store; beside them a raw fsync measured on the same disk, the floor of the `fsync` mode.
`orders.lookup` opens the business database and runs a query, so the tool alone is measured
too, and a governed no-op tool beside it (what governance itself costs).
Targets (issue 11): `os` p50 <= 250 us; `fsync` p50 <= one fsync + 150 us. An allowed call
syncs twice in `fsync` mode by design (before the tool and after it), so the bound is read two
ways: (a) the write-ahead latency, from `Firewall.call` entry to the tool's first line (one
sync), against one fsync + 150 us; (b) the whole call, against two fsyncs + 150 us.

Run: .venv/bin/python benchmarks/firewall_call.py [--calls N]
Results are written down in benchmarks/RESULTS.md with the command that produced them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from governance import Firewall, PolicyContext, Principal, StaticPolicy, ToolCall, ToolRegistry
from governance.policy import evaluate, load_policy
from governance.stores import AuditBackend, AuditLog, Durability, MemoryAuditLog
from governance.tools import LocalToolSource, builtin_tools, local_tool
from harness.cli._options import shipped_policy_path

NOOP_POLICY = """\
version: 1
rules:
  - {id: bench-noop, effect: allow, match: {tool: bench.noop}}
"""


class _NoopArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    note: str


_TOOL_STARTED = [0.0]  # perf_counter() at the no-op tool's first line
_AHEAD = "write-ahead (call entry -> no-op tool's first line)"


@local_tool(
    "bench.noop", description="Does nothing.", args=_NoopArgs, action_type="read", risk="low"
)
def _noop(args: _NoopArgs) -> str:
    _TOOL_STARTED[0] = time.perf_counter()
    return "ok"


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

        (workspace / "noop.yaml").write_text(NOOP_POLICY)
        noop_registry = ToolRegistry([LocalToolSource([_noop])])
        noop_policy = load_policy(workspace / "noop.yaml")
        # Order ids vary per call (all seeded), so the arguments are new text in every call.
        orders = [f"ORD-{i:04d}" for i in range(1, 4)]
        samples: dict[str, list[float]] = {}
        source = registry._source_for("orders.lookup")
        assert source is not None
        for n in range(args.calls):
            one = ToolCall(f"t{n}", "orders.lookup", {"order_id": orders[n % 3]}, "t", principal)
            t0 = time.perf_counter()
            assert source.call(one).outcome == "executed"
            samples.setdefault("  tool orders.lookup alone", []).append(
                (time.perf_counter() - t0) * 1e6
            )
        # The disk is shared and its fsync cost swings from 0.2 to 4 ms from one minute to
        # the next, so the raw fsync is probed inside the fsync loop, once per round.
        probe = os.open(workspace / "fsync-probe", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        raw_fsync: list[float] = []
        for store in ("fsync", "os", "memory"):
            durability: Durability = "os" if store == "os" else "fsync"
            audit: AuditBackend = (
                MemoryAuditLog()
                if store == "memory"
                else AuditLog(workspace / f"audit-{store}.sqlite", durability=durability)
            )
            with audit:
                firewall = Firewall(registry, StaticPolicy(policy), audit)
                noop = Firewall(noop_registry, StaticPolicy(noop_policy), audit)
                for n in range(args.calls):
                    order = {"order_id": orders[n % 3]}
                    for case, gate, tool, arguments in (
                        ("allowed (orders.lookup)", firewall, "orders.lookup", order),
                        # Free text never seen before: every redaction pass scans it.
                        ("allowed (no-op tool)", noop, "bench.noop", {"note": f"n{n}: done?"}),
                        ("blocked (fs.delete)", firewall, "fs.delete", {"path": "notes/todo.txt"}),
                    ):
                        one = ToolCall(f"c{n}", tool, arguments, f"bench-{case[:9]}", principal)
                        t0 = time.perf_counter()
                        result = gate.call(one)
                        label = f"{store:>6} {case}"
                        samples.setdefault(label, []).append((time.perf_counter() - t0) * 1e6)
                        if tool == "bench.noop":
                            ahead = f"{store:>6} {_AHEAD}"
                            samples.setdefault(ahead, []).append((_TOOL_STARTED[0] - t0) * 1e6)
                        assert result.outcome == ("blocked" if case[0] == "b" else "executed")
                    if store == "fsync":
                        raw_fsync.append(_raw_fsync_us(probe))
        os.close(probe)
        fsync_us = statistics.median(raw_fsync)

    print(f"calls per case: {args.calls}")
    print(f"policy evaluate only: {decide_us:.1f} us/call")
    print(f"raw fsync on this disk (4 KiB write + fsync, same rounds): median {fsync_us:.0f} us")
    medians = {}
    for label, values in samples.items():
        values.sort()
        medians[label] = statistics.median(values)
        print(f"{label}: p50 {medians[label]:.0f} us, p95 {values[int(len(values) * 0.95)]:.0f} us")
    for case in ("allowed (orders.lookup)", "allowed (no-op tool)"):
        os_p50 = medians[f"    os {case}"]
        verdict = "met" if os_p50 <= 250 else "MISSED"
        print(f"target os p50 <= 250 us, {case}: {os_p50:.0f} us -> {verdict}")
    # An allowed call commits twice in `fsync` mode by design (before the tool, and its
    # outcome after): its floor is two fsyncs; one stands before the tool. A blocked call
    # commits once.
    for case, syncs in (
        (_AHEAD, 1),
        ("allowed (no-op tool)", 2),
        ("blocked (fs.delete)", 1),
    ):
        fsync_p50 = medians[f" fsync {case}"]
        bound = syncs * fsync_us + 150
        print(
            f"fsync {case}: p50 {fsync_p50:.0f} us vs {syncs} fsync + 150 us ({bound:.0f} us) "
            f"-> {'met' if fsync_p50 <= bound else 'MISSED'}"
        )


def _raw_fsync_us(fd: int) -> float:
    """Appending 4 KiB and fsync'ing it: what one durable commit must pay at least."""
    os.write(fd, b"x" * 4096)
    t0 = time.perf_counter()
    os.fsync(fd)
    return (time.perf_counter() - t0) * 1e6


if __name__ == "__main__":
    main()
