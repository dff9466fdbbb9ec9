"""Fixtures of the generator's tests: AgentDojo's suites, and one import of all four."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness import _exit_codes as codes
from tests.unit.harness.agentdojo.importing import VERSION, require_agentdojo, run_import


@pytest.fixture(scope="session")
def suites() -> dict[str, Any]:
    """AgentDojo's suites of the default benchmark version (name: TaskSuite)."""
    require_agentdojo()
    from agentdojo.task_suite.load_suites import get_suites

    return dict(get_suites(VERSION))


@pytest.fixture(scope="session")
def imported(suites: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One import of all four suites (read-only for the tests): <root>/out/<suite>/...,
    policies named under <root>/policies."""
    root = tmp_path_factory.mktemp("agentdojo-import")
    code, _, stderr = run_import("--out", str(root / "out"), "--policy-dir", str(root / "policies"))
    assert code == codes.OK, stderr
    return root
