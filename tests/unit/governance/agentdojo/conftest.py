"""AgentDojo's suites (benchmark v1.2.2), loaded once; tests that take `suites` skip without
the optional package (see tests/agentdojo_required.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.agentdojo_required import require_agentdojo

BENCHMARK_VERSION = "v1.2.2"


@pytest.fixture(scope="session")
def suites() -> dict[str, Any]:
    load_suites = require_agentdojo("agentdojo.task_suite.load_suites")
    found: dict[str, Any] = load_suites.get_suites(BENCHMARK_VERSION)
    return found
