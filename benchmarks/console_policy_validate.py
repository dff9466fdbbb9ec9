"""Cost of the console's validation as the operator types (`PolicyEditor.validate`): the
shipped policy, and a 100-rule policy, valid and with one unknown tool name.

Run: .venv/bin/python benchmarks/console_policy_validate.py [--calls N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from governance.stores import MemoryAuditLog
from governance.tools import builtin_registry
from harness.cli._options import shipped_policy_path
from harness.console._policy_edit import PolicyEditor

_TOOLS = ("fs.read", "fs.list", "db.query", "orders.lookup", "kb.search", "http.get")


def hundred_rules() -> str:
    """100 rules over the built-in tools, a third with an argument condition."""
    rules = []
    for n in range(100):
        tool = _TOOLS[n % len(_TOOLS)]
        rule = (
            f"  - id: rule-{n:03d}\n"
            f"    description: generated rule {n}\n"
            f"    effect: {('allow', 'require_approval', 'block')[n % 3]}\n"
            f"    match:\n      tool: [{tool}]\n"
        )
        if n % 3 == 0:
            rule += f"    when:\n      - arg: path\n        path_prefix: area-{n}/\n"
        rules.append(rule)
    return "version: 1\ndefaults: {unknown_tool: block, no_match: block}\nrules:\n" + "".join(rules)


def _per_call_ms(fn: Callable[[], object], calls: int) -> float:
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        runs.append((time.perf_counter() - start) / calls * 1e3)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    shipped = shipped_policy_path()
    editor = PolicyEditor(
        policy_path=Path("policy.yaml"), registry=builtin_registry(), audit=MemoryAuditLog()
    )
    big = hundred_rules()
    cases = {
        f"shipped ({len(shipped.read_bytes())} B)": shipped.read_text(encoding="utf-8"),
        f"100 rules ({len(big.encode())} B)": big,
        "100 rules, one unknown tool": big.replace("tool: [kb.search]", "tool: [kb.serch]", 1),
        "100 rules, one YAML error": big.replace("effect: block", "effect: [block", 1),
    }
    for label, text in cases.items():
        verdict = editor.validate(text)
        assert verdict.ok == ("one" not in label), (label, verdict.problems)
        cost = _per_call_ms(lambda text=text: editor.validate(text), args.calls)
        print(f"{label}: validate {cost:.2f} ms ({len(verdict.problems)} problems)")


if __name__ == "__main__":
    main()
