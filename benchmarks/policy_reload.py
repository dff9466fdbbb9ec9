"""Cost of `PolicyFile.current()`, which reads and hashes the policy file on every call.

Run: .venv/bin/python benchmarks/policy_reload.py [--calls N]
Results are written down in benchmarks/RESULTS.md with the command that produced them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from governance.policy import PolicyFile
from harness.cli._options import shipped_policy_path


def _per_call_us(fn: Callable[[], object], calls: int) -> float:
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        runs.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args()
    shipped = shipped_policy_path()
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "policy.yaml"
        text = shipped.read_text(encoding="utf-8")
        big.write_text(text + "#" * max(0, 10_240 - len(text.encode())) + "\n", encoding="utf-8")
        for label, path in (("shipped", shipped), ("10 KB", big)):
            source = PolicyFile(path)
            cost = _per_call_us(source.current, args.calls)
            print(f"{label} ({path.stat().st_size} B): current() {cost:.1f} us")
        print(f"os.stat alone: {_per_call_us(lambda: os.stat(big), args.calls):.1f} us")


if __name__ == "__main__":
    main()
