"""A replay run loads only what its scenarios use: scenarios without MCP servers, audit
checkpoints or a store key never import the MCP config models, the `cryptography` package or
the PostgreSQL backend (each costs a fresh process milliseconds, on every run).

Each case runs `proctor run` in a fresh interpreter and lists what ended up in `sys.modules`.
Speed itself is measured in benchmarks/, never here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

PROBE = """
import json, sys
from harness.cli._app import cli
code = cli.main(sys.argv[2:], prog_name="proctor", standalone_mode=False)
with open(sys.argv[1], "w", encoding="utf-8") as out:
    json.dump({"code": code, "modules": sorted(sys.modules)}, out)
"""

NOT_FOR_A_PLAIN_RUN = (
    "cryptography",
    "governance.mcp",
    "governance.stores._checkpoint",
    "governance.stores._checkpoint_keys",
    "governance.stores._checkpoint_schedule",
    "governance.stores._approvals_postgres",
    "governance.stores._audit_postgres",
    "governance.stores._budgets_postgres",
    "governance.stores._postgres_schema",
    "governance.stores._postgres_stores",
    "dotenv",
)


def _run(tmp_path: Path, *files: str) -> dict[str, object]:
    suite = tmp_path / "suite"
    suite.mkdir()
    for name in files:
        shutil.copy(REPO / "scenarios" / name, suite / name)
    for folder in ("policies", "scripts"):
        shutil.copytree(REPO / "scenarios" / folder, suite / folder)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROCTOR_")}
    env["PROCTOR_CACHE_DIR"] = str(tmp_path / "cache")
    args = ["run", "--no-baseline", "--scenarios", "suite", "--report-dir", "out"]
    subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "probe.json"), *args],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        timeout=300,
        check=True,
    )
    return dict(json.loads((tmp_path / "probe.json").read_text(encoding="utf-8")))


def _loaded(modules: list[str], package: str) -> list[str]:
    return [m for m in modules if m == package or m.startswith(package + ".")]


def test_a_plain_replay_run_imports_no_checkpoint_mcp_or_postgres_code(tmp_path: Path) -> None:
    seen = _run(tmp_path, "reads.yaml", "approvals.yaml", "budgets.yaml")
    assert seen["code"] == 0
    modules = seen["modules"]
    assert isinstance(modules, list)
    assert "harness._scenario_runner" in modules  # it did run
    assert {p: _loaded(modules, p) for p in NOT_FOR_A_PLAIN_RUN} == {
        p: [] for p in NOT_FOR_A_PLAIN_RUN
    }


def test_a_run_with_a_checkpoint_scenario_loads_what_checkpoints_need(tmp_path: Path) -> None:
    seen = _run(tmp_path, "checkpoints.yaml")
    assert seen["code"] == 0
    modules = seen["modules"]
    assert isinstance(modules, list)
    assert "governance.stores._checkpoint_schedule" in modules
    assert _loaded(modules, "cryptography")
