"""Redaction coverage and cost: masked share per sink over the committed corpus, and throughput.

Run: .venv/bin/python benchmarks/redaction.py
Results are written down in benchmarks/RESULTS.md with the command that produced them.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from governance.screening import redact_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the corpus lives under tests/
from tests.unit.governance.redaction_corpus.presentations import (  # noqa: E402
    SINKS,
    false_redactions,
    load,
    masked_tally,
    texts,
)


def main() -> None:
    secrets, lookalikes = load()
    kinds = len({s.kind for s in secrets})
    print(f"corpus: {len(secrets)} fake secrets of {kinds} kinds, {len(lookalikes)} look-alikes")
    print("| sink | masked | false redactions |\n| --- | --- | --- |")
    for sink in SINKS:
        masked = masked_tally(sink, secrets)
        false = false_redactions(sink, lookalikes)
        print(
            f"| {sink} | {masked.masked}/{masked.total} ({masked.rate:.2%}) "
            f"| {false.masked}/{false.total} ({false.rate:.2%}) |"
        )
    # Throughput on a realistic tool output: every presentation joined into one 1 MB-ish text.
    blob = "\n".join(t for s in secrets for _, t in texts(s))
    runs = []
    for _ in range(5):
        started = time.perf_counter()
        redact_text(blob)
        runs.append(time.perf_counter() - started)
    median = statistics.median(runs)
    print(f"throughput: {len(blob) / median / 1e6:.2f} MB/s ({len(blob)} chars in {median:.3f} s)")
    one = [t for s in secrets for _, t in texts(s)][:2000]
    started = time.perf_counter()
    for t in one:
        redact_text(t)
    print(f"one short text: {(time.perf_counter() - started) / len(one) * 1e6:.0f} µs")


if __name__ == "__main__":
    main()
