"""AgentDojo's suites (benchmark v1.2.2), loaded once; tests that take `suites` skip without
the optional package, or fail when it is required (tests/agentdojo_support.py)."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from tests.agentdojo_support import require_agentdojo

BENCHMARK_VERSION = "v1.2.2"


@pytest.fixture(scope="session")
def suites() -> dict[str, Any]:
    require_agentdojo()
    load_suites = importlib.import_module("agentdojo.task_suite.load_suites")
    found: dict[str, Any] = load_suites.get_suites(BENCHMARK_VERSION)
    return found
