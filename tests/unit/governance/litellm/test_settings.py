"""The guardrail's settings: only `proctor_*` params are read, a typo is an error, and the
environment fills in what the LiteLLM config leaves out."""

from __future__ import annotations

from pathlib import Path

import pytest

from governance.core._errors import ConfigError
from governance.litellm import settings_from

FACTS = {"action_type": "read", "risk": "low", "reversible": True, "external_side_effect": False}


def test_only_proctor_keys_are_read_and_litellm_s_own_are_ignored() -> None:
    settings = settings_from(
        {"proctor_policy": "p.yaml", "mode": "pre_mcp_call", "fail_on_error": True, "mask": 1},
        {},
    )
    assert settings.policy_path == Path("p.yaml")
    assert settings.state_dir == Path(".proctor")
    assert settings.store_url == "sqlite"


def test_an_unknown_proctor_key_is_refused_naming_it_and_the_known_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from({"proctor_policy": "p.yaml", "proctor_polcy": "q.yaml"}, {})
    assert "unknown setting 'proctor_polcy'" in str(caught.value)
    assert "proctor_policy" in str(caught.value)
    assert "litellm_params" in str(caught.value)


def test_no_policy_anywhere_is_refused_with_the_fix() -> None:
    with pytest.raises(ConfigError, match="set proctor_policy .* or PROCTOR_POLICY"):
        settings_from({"proctor_state_dir": "/tmp/x"}, {})


def test_the_environment_fills_what_the_params_leave_out() -> None:
    env = {
        "PROCTOR_POLICY": "env.yaml",
        "PROCTOR_STATE_DIR": "/srv/proctor",
        "PROCTOR_STORE_URL": "sqlite:///srv/stores",
    }
    settings = settings_from({}, env)
    assert (settings.policy_path, settings.state_dir, settings.store_url) == (
        Path("env.yaml"),
        Path("/srv/proctor"),
        "sqlite:///srv/stores",
    )
    # The config's own value wins over the environment.
    assert settings_from({"proctor_store_url": "memory:"}, env).store_url == "memory:"


@pytest.mark.parametrize("name", ["demo.echo", "mcp.demo", "mcp.de.mo.echo", "fn.", "shell"])
def test_a_tool_name_outside_mcp_or_fn_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match="mcp.<server>.<tool>"):
        settings_from({"proctor_policy": "p.yaml", "proctor_tools": {name: FACTS}}, {})


def test_tool_facts_are_checked_like_the_mcp_servers_file() -> None:
    wrong = {**FACTS, "action_type": "harmless"}
    with pytest.raises(ConfigError, match="proctor_tools.mcp.demo.echo.action_type"):
        settings_from({"proctor_policy": "p.yaml", "proctor_tools": {"mcp.demo.echo": wrong}}, {})
    extra = {**FACTS, "safe": True}
    with pytest.raises(ConfigError, match="safe"):
        settings_from({"proctor_policy": "p.yaml", "proctor_tools": {"mcp.demo.echo": extra}}, {})


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), float("nan"), "soon"])
def test_an_outcome_timeout_that_is_not_a_positive_number_is_refused(timeout: object) -> None:
    with pytest.raises(ConfigError, match="proctor_outcome_timeout"):
        settings_from({"proctor_policy": "p.yaml", "proctor_outcome_timeout": timeout}, {})
