"""`proctor run -j N` forks workers from a process whose Telemetry is started but has seen no
event: no thread was started to lose in the fork, and each child exports its own spans."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from governance.telemetry._ids import run_trace_id
from tests.otel_receiver import OtlpReceiver

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]

# The parent starts telemetry, forks two children, each drives one run and shuts down; the parent
# reports how many threads it had before and after starting, and each child's exit status.
SCRIPT = """
import os, sys, threading, time
from governance.telemetry import Telemetry, telemetry_config

config = telemetry_config(flag=False, environ={"PROCTOR_OTEL_ENDPOINT": sys.argv[1]})
before = threading.active_count()
telemetry = Telemetry.start(config, service_role="eval")
after = threading.active_count()


class Event:
    def __init__(self, kind, run_id, data):
        self.kind, self.run_id, self.call_id, self.tool = kind, run_id, "", ""
        self.data, self.at_ns = data, time.time_ns()


if sys.argv[2] == "warm":  # the parent's thread runs, and a run of its own is in flight
    telemetry.observe(Event("run.started", "parent", {"provider": "replay", "model": "m"}))
children = []
for n in (1, 2):
    pid = os.fork()
    if pid == 0:
        run_id = f"child-{n}"
        telemetry.observe(Event("run.started", run_id, {"provider": "replay", "model": "m"}))
        telemetry.observe(Event("run.finished", run_id, {"status": "completed"}))
        telemetry.shutdown(timeout_seconds=10)
        os._exit(0)
    children.append(pid)
codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
if sys.argv[2] == "warm":
    telemetry.observe(Event("run.finished", "parent", {"status": "completed"}))
    telemetry.shutdown(timeout_seconds=10)
print(before, after, *codes)
"""


def _forked(tmp_path: Path, parent: str) -> tuple[list[int], list[dict[str, Any]], str]:
    """The parent's thread counts and the children's exit codes, the spans and stderr."""
    with OtlpReceiver(tmp_path) as receiver:
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, receiver.endpoint, parent],
            capture_output=True, text=True, cwd=REPO, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        return [int(word) for word in done.stdout.split()], receiver.spans(), done.stderr


def test_children_forked_before_any_event_each_export_their_own_run(tmp_path: Path) -> None:
    (before, after, *codes), spans, stderr = _forked(tmp_path, "cold")
    assert after == before  # started, yet no thread: nothing for a fork to lose
    assert codes == [0, 0]
    runs = {s["attributes"]["proctor.run.id"]: s for s in spans}
    assert sorted(runs) == ["child-1", "child-2"] and len(spans) == 2
    for run_id, span in runs.items():
        assert span["trace_id"] == f"{run_trace_id(run_id):032x}"
    assert stderr == ""


def test_a_child_forked_after_events_exports_only_its_own(tmp_path: Path) -> None:
    (_, _, *codes), spans, stderr = _forked(tmp_path, "warm")
    assert codes == [0, 0]
    # The parent's run once (from the parent), each child's once: nothing copied in the fork
    # is exported twice, and the parent's exporter survived its children.
    assert sorted(s["attributes"]["proctor.run.id"] for s in spans) == [
        "child-1", "child-2", "parent",
    ]  # fmt: skip
    assert stderr == ""
