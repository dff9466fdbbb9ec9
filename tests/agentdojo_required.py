"""Tests that need the optional AgentDojo package skip without it, with the line that installs
it; PROCTOR_REQUIRE_AGENTDOJO=1 (a CI job that installed the extra) turns the skip into a
failure, so a broken install cannot pass as "skipped"."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

INSTALL = "pip install 'proctor[agentdojo]'"
REQUIRE_ENV = "PROCTOR_REQUIRE_AGENTDOJO"


def require_agentdojo(module: str = "agentdojo") -> ModuleType:
    """Import `module` of AgentDojo, or skip (fail when PROCTOR_REQUIRE_AGENTDOJO=1)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        message = f"AgentDojo is not installed ({exc}): {INSTALL}"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {message}")
        pytest.skip(message)
