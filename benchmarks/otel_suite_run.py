"""`proctor run` of the shipped suite with OpenTelemetry export on and off, serial and -j 2.

Each run is the whole command as a user runs it (a fresh interpreter, every report written),
export going to the real OTLP/HTTP receiver of the tests (tests/otel_receiver.py, a process of
its own on loopback). Off and on alternate, so drift of a noisy machine hits both alike. The
exporting run's time includes its flush at exit.

Run: .venv/bin/python benchmarks/otel_suite_run.py [--repeat N]
Results are written down in benchmarks/RESULTS.md with the command that produced them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.otel_receiver import OtlpReceiver  # noqa: E402


def _run(out: Path, jobs: int, endpoint: str | None) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROCTOR_", "OTEL_"))}
    flags = []
    if endpoint is not None:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
        flags = ["--otel"]
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--no-baseline", "-j", str(jobs), *flags,
         "--report-dir", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or "OpenTelemetry export failed" in done.stderr:
        raise SystemExit(f"the run failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="proctor-otel-bench-") as scratch:
        root = Path(scratch)
        with OtlpReceiver(root) as receiver:
            for jobs in (1, 2):
                walls: dict[str, list[float]] = {"off": [], "on": []}
                for n in range(args.repeat):
                    for mode in ("off", "on") if n % 2 == 0 else ("on", "off"):
                        endpoint = receiver.endpoint if mode == "on" else None
                        out = root / f"{mode}-{jobs}-{n}"
                        walls[mode].append(_run(out, jobs, endpoint))
                off, on = statistics.median(walls["off"]), statistics.median(walls["on"])
                print(
                    f"-j {jobs}: off median {off:.2f} s, on median {on:.2f} s "
                    f"({(on - off) / off * 100:+.1f}%); off {_shown(walls['off'])}, "
                    f"on {_shown(walls['on'])}"
                )
            spans = len(receiver.spans())
    print(f"spans received: {spans} over {args.repeat * 2} exporting runs")


def _shown(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:.2f}" for v in values) + "]"


if __name__ == "__main__":
    main()
