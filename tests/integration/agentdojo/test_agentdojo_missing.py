"""Without the `agentdojo` extra, an AgentDojo scenario is a usage error naming the install
command (exit 64), never a traceback; the rest of Proctor does not need the package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SUITE = ROOT / "tests" / "data" / "agentdojo" / "banking"


def test_an_agentdojo_scenario_without_the_package_exits_64_with_the_install_line(
    tmp_path: Path,
) -> None:
    shadow = tmp_path / "shadow" / "agentdojo"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('raise ImportError("no agentdojo here")\n', "utf-8")
    env = {**os.environ, "PYTHONPATH": f"{shadow.parent}{os.pathsep}{ROOT}"}
    run = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--scenarios", str(SUITE), "--no-baseline"]
        + ["--report-dir", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert run.returncode == 64, run.stdout + run.stderr
    assert "pip install 'proctor[agentdojo]'" in run.stderr
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "r").exists()  # refused before anything ran
