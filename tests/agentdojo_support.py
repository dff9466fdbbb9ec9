"""AgentDojo for the tests: the optional `agentdojo` extra (`make agentdojo`). Without it the
tests that need it skip with that command; with `PROCTOR_REQUIRE_AGENTDOJO=1` (set by
`.ci/run`) they fail instead, so CI can never go green by quietly not running them."""

from __future__ import annotations

import os
from importlib.util import find_spec

import pytest

INSTALL_COMMAND = "make agentdojo (or: pip install 'proctor[agentdojo]')"
REQUIRE_ENV = "PROCTOR_REQUIRE_AGENTDOJO"


def require_agentdojo() -> None:
    """Skip (locally) or fail (CI) when the agentdojo package is not installed."""
    if find_spec("agentdojo") is not None:
        return
    message = f"AgentDojo is not installed: {INSTALL_COMMAND}"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{message} ({REQUIRE_ENV}=1: required here)")
    pytest.skip(message)
