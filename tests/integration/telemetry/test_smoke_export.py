"""`proctor smoke --stub --otel`: the live path's smoke runs are exported like any other run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import _exit_codes as codes
from harness._smoke import SMOKE_SCENARIOS
from tests.otel_receiver import OtlpReceiver

pytestmark = pytest.mark.slow


def test_each_smoke_scenario_is_exported_as_a_run_with_its_model_turns(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROCTOR_", "OTEL_"))}
    with OtlpReceiver(tmp_path) as receiver:
        done = subprocess.run(
            [sys.executable, "-m", "harness", "smoke", "--stub", "--otel"],
            cwd=tmp_path,
            env={**env, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint},
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        spans = receiver.spans()
    assert done.returncode == codes.OK, done.stdout + done.stderr
    runs = {s["attributes"]["proctor.run.id"]: s for s in spans if s["name"].startswith("invoke_")}
    assert sorted(runs) == sorted(f"smoke-{s.name}" for s in SMOKE_SCENARIOS)
    for run in runs.values():
        turns = [
            s
            for s in spans
            if s["parent_span_id"] == run["span_id"] and s["name"].startswith("chat ")
        ]
        assert turns and all(t["attributes"]["proctor.provider.live"] for t in turns)
    assert {s["resource"]["proctor.role"] for s in spans} == {"smoke"}
