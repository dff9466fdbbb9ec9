"""What OpenTelemetry export costs one governed call (issue 18): the allowed no-op call of
benchmarks/firewall_call.py on the SQLite store in `os` durability, export off vs on, the
export going over OTLP/HTTP to a real receiver in another process (tests/otel_receiver.py).

Rounds interleave off and on (same process, same audit file, alternating), and each round waits
for the background export to go idle before the next, so neither side pays for the other's
exporting. Target: on <= 1.10 x off at p50.

Run: .venv/bin/python benchmarks/otel_overhead.py [--calls N] [--rounds R]
Results are written down in benchmarks/RESULTS.md with the command that produced them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from governance import Firewall, Principal, StaticPolicy, ToolCall, ToolRegistry
from governance.policy import load_policy
from governance.stores import AuditLog
from governance.telemetry import Telemetry, telemetry_config
from governance.tools import LocalToolSource, local_tool

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.otel_receiver import OtlpReceiver  # noqa: E402 - the repo root is on the path now

NOOP_POLICY = """\
version: 1
rules:
  - {id: bench-noop, effect: allow, match: {tool: bench.noop}}
"""


class _NoopArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    note: str


@local_tool(
    "bench.noop", description="Does nothing.", args=_NoopArgs, action_type="read", risk="low"
)
def _noop(args: _NoopArgs) -> str:
    return "ok"


def _round(firewall: Firewall, run_id: str, calls: int, principal: Principal) -> list[float]:
    """One drive of a run: `calls` governed calls between run.started and run.finished."""
    firewall.record_run_event(run_id, "run.started", {"provider": "bench", "model": "none"})
    samples = []
    for n in range(calls):
        one = ToolCall(f"c{n}", "bench.noop", {"note": f"n{n}: done?"}, run_id, principal)
        t0 = time.perf_counter()
        result = firewall.call(one)
        samples.append((time.perf_counter() - t0) * 1e6)
        assert result.outcome == "executed"
    firewall.record_run_event(run_id, "run.finished", {"status": "completed"})
    return samples


def _idle(telemetry: Telemetry) -> None:
    """Until the background thread has taken everything and the SDK's batch went out."""
    while telemetry._queue:
        time.sleep(0.01)
    time.sleep(0.3)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * q), len(ordered) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=500, help="calls per round and side")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    principal = Principal("bench", "bench-agent", "bench-team")
    with tempfile.TemporaryDirectory() as tmp, OtlpReceiver(Path(tmp)) as receiver:
        workspace = Path(tmp)
        (workspace / "noop.yaml").write_text(NOOP_POLICY)
        registry = ToolRegistry([LocalToolSource([_noop])])
        policy = StaticPolicy(load_policy(workspace / "noop.yaml"))
        config = telemetry_config(flag=False, environ={"PROCTOR_OTEL_ENDPOINT": receiver.endpoint})
        assert config is not None
        telemetry = Telemetry.start(config, service_role="serve")
        samples: dict[str, list[float]] = {"off": [], "on": []}
        with AuditLog(workspace / "audit.sqlite", durability="os") as audit:
            off = Firewall(registry, policy, audit)
            on = Firewall(registry, policy, audit, observers=(telemetry.observe,))
            _round(off, "warm-off", 200, principal)  # caches, the SDK's first spans
            _round(on, "warm-on", 200, principal)
            _idle(telemetry)
            for r in range(args.rounds):
                sides = ("off", "on") if r % 2 == 0 else ("on", "off")
                for side in sides:
                    firewall = on if side == "on" else off
                    samples[side] += _round(firewall, f"{side}-{r}", args.calls, principal)
                    _idle(telemetry)
        telemetry.shutdown(timeout_seconds=30)
        spans = len(receiver.spans())
    total = args.rounds * args.calls
    print(f"calls per side: {total} ({args.rounds} interleaved rounds of {args.calls})")
    print(f"spans the receiver decoded: {spans} (dropped on the hot path: {telemetry.dropped})")
    for side in ("off", "on"):
        values = samples[side]
        print(
            f"export {side:>3}: p50 {statistics.median(values):.1f} us, "
            f"p90 {_pct(values, 0.9):.1f} us, p99 {_pct(values, 0.99):.1f} us"
        )
    ratio = statistics.median(samples["on"]) / statistics.median(samples["off"])
    verdict = "met" if ratio <= 1.10 else "MISSED"
    print(f"on/off at p50: {ratio:.3f} (target <= 1.10) -> {verdict}")


if __name__ == "__main__":
    main()
