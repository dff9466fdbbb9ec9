"""Traces name their scenario file relative to the scenario root, so they are byte-identical
however `--scenarios` was spelled and wherever `proctor` was started (real subprocesses)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.small_suite import SMALL_IDS, build_small_suite

pytestmark = pytest.mark.slow

_RUN_ID = re.compile(rb'"run_id":"[^"]*",?')


def test_two_working_directories_and_three_spellings_give_byte_identical_traces(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    build_small_suite(root)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    files = ["./scenarios/blocks.yaml", "scenarios/reads.yaml", "./scenarios/budgets.yaml"]
    runs = {
        "directory": (root, ["--scenarios", "scenarios/"]),
        "files": (root, [a for f in files for a in ("--scenarios", f)]),
        "inside": (root / "scenarios", ["--scenarios", "."]),
        "absolute": (elsewhere, ["--scenarios", str(root / "scenarios")]),
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROCTOR_")}
    started = {
        name: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "harness",
                "run",
                "--no-baseline",
                *args,
                "--report-dir",
                str(tmp_path / "out" / name),
            ],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for name, (cwd, args) in runs.items()
    }
    traces: dict[str, dict[str, bytes]] = {}
    for name, process in started.items():
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, f"{name}:\n{out}\n{err}"
        folder = tmp_path / "out" / name / "traces"
        traces[name] = {p.stem: _RUN_ID.sub(b"", p.read_bytes()) for p in folder.glob("*.json")}
    assert sorted(traces["directory"]) == SMALL_IDS
    assert b'"scenario_file":"scenarios/blocks.yaml"' in traces["inside"]["block-unknown-tool"]
    for name in runs:
        assert traces[name] == traces["directory"], name
