"""A governor for the response-filtering tests: `fn.lookup` is allowed, anything else is not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from governance.litellm import ToolCallGovernor, settings_from

RESPONSE_POLICY = """\
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - {id: lookup, effect: allow, match: {tool: fn.lookup}}
"""
READ = {"action_type": "read", "risk": "low", "reversible": True, "external_side_effect": False}


@pytest.fixture
def lookup_only(tmp_path: Path) -> Iterator[ToolCallGovernor]:
    policy = tmp_path / "response-policy.yaml"
    policy.write_text(RESPONSE_POLICY, encoding="utf-8")
    settings = settings_from(
        {
            "proctor_policy": str(policy),
            "proctor_state_dir": str(tmp_path / "response-state"),
            "proctor_tools": {"fn.lookup": READ},
        },
        {},
    )
    made = ToolCallGovernor(settings)
    yield made
    made.close()
