"""One policy decision at 10/100/1000 rules, Proctor beside tollgate and toolwarden, same run.

Every engine gets the same shape of policy: N-1 rules for other tools and, last, the one rule
that matches the call (`fs.read`), with a condition on the `path` argument (under `reports/`).
Each is asked in its own cheapest supported form, with its inputs built once outside the timer:

- Proctor: `evaluate(context, policy)`, a `path_prefix: reports/` condition (the path must also
  be canonical, which Proctor checks and the peers do not).
- tollgate: `YamlPolicyEvaluator.evaluate(agent, intent, request)`, first match in file order;
  it has no prefix operator, so the condition is the string range `reports/ <= path < reports0`
  on the request metadata (the same set of strings).
- toolwarden: `Gate.decide(tool=, args=, principal=)`, one `@policy` per tool; a normalizer for
  `fs.read` provides the path fact and the matching policy checks `startswith("reports/")`.

Proctor gathers the candidate rules for a tool name once and keeps them; the "cache emptied"
lines gather them from the index on every call (a tool name seen for the first time).

Each figure is the per-decision time of a batch of calls; p50/p95 are over batches, and the
engines are interleaved batch by batch so they share the machine's noise.

Run: .venv/bin/python benchmarks/policy_decision.py [--batches N] [--batch-size N]
Peers: .venv/bin/pip install -e '.[bench]'. A peer that is not installed is reported as such.
Results are written down in benchmarks/RESULTS.md with the command that produced them.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from governance import PolicyContext, Principal, ToolCall, ToolDescriptor, parse_policy
from governance.policy import Policy, evaluate

SIZES = (10, 100, 1000)
PEER_SIZE = 100
TOOL = "fs.read"
PATH = "reports/q3/summary.txt"
OUTSIDE = "secrets/key.txt"

Decide = Callable[[], object]


def _other(i: int) -> str:
    return f"svc{i:04d}.op"


def proctor(rules: int) -> tuple[Policy, Decide, Decide]:
    """The policy, a decision on the allowed path, and one on a path outside `reports/`."""
    lines = ["version: 1", "rules:"]
    for i in range(rules - 1):
        lines.append(f"  - {{id: other-{i:04d}, effect: allow, match: {{tool: {_other(i)}}}}}")
    lines.append(
        f"  - {{id: zz-reports, effect: allow, match: {{tool: {TOOL}}}, "
        "when: [{arg: path, path_prefix: reports/}]}"
    )
    policy = parse_policy("\n".join(lines) + "\n", f"<{rules} rules>")
    descriptor = ToolDescriptor(TOOL, "read a file", {}, "local", "read", "low", True, False, True)
    principal = Principal("bench", "bench-agent", "bench-team")

    def context(path: str) -> PolicyContext:
        call = ToolCall("c1", TOOL, {"path": path}, "bench", principal)
        return PolicyContext.for_call(call, descriptor, registry_digest="sha256:bench")

    inside, outside = context(PATH), context(OUTSIDE)
    decision = evaluate(inside, policy)
    assert (decision.effect, decision.rule_ids) == ("allow", ("zz-reports",)), decision
    assert evaluate(outside, policy).effect == "block"
    return policy, (lambda: evaluate(inside, policy)), (lambda: evaluate(outside, policy))


def proctor_uncached(rules: int) -> Decide:
    """The allowed decision with the per-name candidate cache emptied first: the index alone."""
    policy, allowed, _ = proctor(rules)
    cache = policy.index._cache

    def decide() -> object:
        cache.clear()
        return allowed()

    return decide


def tollgate(rules: int, tmp: Path) -> tuple[Decide, Decide]:
    from tollgate.policy import YamlPolicyEvaluator
    from tollgate.types import AgentContext, DecisionType, Effect, Intent, ToolRequest

    lines = ["version: bench", "rules:"]
    for i in range(rules - 1):
        lines += [f"  - id: other-{i:04d}", f"    tool: {_other(i)}", "    decision: ALLOW"]
    lines += [
        "  - id: zz-reports",
        f"    tool: {TOOL}",
        "    decision: ALLOW",
        "    when:",
        "      path: {'>=': 'reports/', '<': 'reports0'}",
    ]
    path = tmp / f"tollgate-{rules}.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    evaluator = YamlPolicyEvaluator(path)
    agent = AgentContext(agent_id="bench-agent", version="1", owner="bench")
    intent = Intent(action="read", reason="bench")

    def request(value: str) -> Any:
        return ToolRequest(
            tool=TOOL,
            action="read",
            resource_type="file",
            effect=Effect.READ,
            params={"path": value},
            metadata={"path": value},
            manifest_version="1",
        )

    inside, outside = request(PATH), request(OUTSIDE)
    assert evaluator.evaluate(agent, intent, inside).decision == DecisionType.ALLOW
    assert evaluator.evaluate(agent, intent, outside).decision == DecisionType.DENY
    return (
        (lambda: evaluator.evaluate(agent, intent, inside)),
        (lambda: evaluator.evaluate(agent, intent, outside)),
    )


def toolwarden(rules: int) -> tuple[Decide, Decide]:
    from toolwarden import NOT_APPLICABLE, Allow, FactKey, Facts, Gate, Verdict, normalizer, policy

    path_fact: FactKey[str] = FactKey("path")

    @normalizer("path", tools=(TOOL,), provides=(path_fact,))
    def path_normalizer(call: Any) -> dict[FactKey[Any], object]:
        value = call.args.get("path")
        if not isinstance(value, str):
            raise ValueError("path is not a string")
        return {path_fact: value}

    def other(i: int) -> Any:
        @policy(f"other-{i:04d}", tools=(_other(i),))
        def body(facts: Facts) -> Verdict:
            return Allow()

        return body

    @policy("zz-reports", tools=(TOOL,), needs=(path_fact,))
    def reports(facts: Facts) -> Verdict:
        return Allow() if facts[path_fact].startswith("reports/") else NOT_APPLICABLE

    gate = Gate([*(other(i) for i in range(rules - 1)), reports], [path_normalizer])
    principal = {"agent": "bench-agent"}
    inside, outside = {"path": PATH}, {"path": OUTSIDE}
    assert gate.decide(tool=TOOL, args=inside, principal=principal).allowed
    assert not gate.decide(tool=TOOL, args=outside, principal=principal).allowed
    return (
        (lambda: gate.decide(tool=TOOL, args=inside, principal=principal)),
        (lambda: gate.decide(tool=TOOL, args=outside, principal=principal)),
    )


def _batch_us(decide: Decide, size: int) -> float:
    start = time.perf_counter()
    for _ in range(size):
        decide()
    return (time.perf_counter() - start) / size * 1e6


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=200)
    args = parser.parse_args()

    engines: dict[str, Decide] = {}
    missing: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in SIZES:
            _, allowed, refused = proctor(size)
            engines[f"proctor {size} rules, allowed"] = allowed
            engines[f"proctor {size} rules, refused"] = refused
            engines[f"proctor {size} rules, allowed, cache emptied"] = proctor_uncached(size)
        for dist, build in (
            ("tollgate", lambda n: tollgate(n, Path(tmp))),
            ("toolwarden", toolwarden),
        ):
            version = _version(dist)
            if version is None:
                missing.append(dist)
                continue
            allowed, refused = build(PEER_SIZE)
            engines[f"{dist} {version} {PEER_SIZE} rules, allowed"] = allowed
            engines[f"{dist} {version} {PEER_SIZE} rules, refused"] = refused

        for decide in engines.values():  # warm caches and the allocator before timing
            _batch_us(decide, args.batch_size)
        samples: dict[str, list[float]] = {name: [] for name in engines}
        for _ in range(args.batches):
            for name, decide in engines.items():
                samples[name].append(_batch_us(decide, args.batch_size))

    p50 = {name: statistics.median(values) for name, values in samples.items()}
    print(f"{args.batches} batches of {args.batch_size} decisions; per-decision time")
    width = max(len(name) for name in samples)
    for name, values in samples.items():
        values.sort()
        p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
        print(f"  {name:<{width}}  p50 {p50[name]:7.2f} us   p95 {p95:7.2f} us")
    for dist in missing:
        print(f"  {dist}: not installed (pip install -e '.[bench]'), not measured")

    ours = p50[f"proctor {PEER_SIZE} rules, allowed"]
    print(f"\nat {PEER_SIZE} rules, allowed call: proctor p50 {ours:.2f} us (target <= 10 us)")
    for name, value in p50.items():
        if name.endswith(f"{PEER_SIZE} rules, allowed") and not name.startswith("proctor"):
            verdict = "faster" if ours < value else "NOT faster"
            print(
                f"  vs {name.split(' ')[0]}: {value:.2f} us -> proctor is {verdict} "
                f"({value / ours:.1f}x)"
            )


if __name__ == "__main__":
    main()
