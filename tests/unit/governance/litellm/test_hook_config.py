"""LiteLLM settings that would let an MCP call run without Proctor's decision, or with other
arguments than the ones judged, are refused when the guardrail is built."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from governance.core._errors import ConfigError
from governance.litellm._hook_config import ConfigGuard, hook_names, mode_error


@pytest.mark.parametrize(
    "mode",
    [
        ["post_call"],
        "pre_call",
        ["pre_call", "during_call"],
        [],
        None,
        SimpleNamespace(tags={"prod": "pre_mcp_call"}, default="post_call"),  # tag-based
    ],
)
def test_a_mode_without_pre_mcp_call_is_refused_with_the_fix(mode: object) -> None:
    error = mode_error(mode)
    assert error is not None
    assert "mode: [pre_mcp_call, post_call]" in error


@pytest.mark.parametrize(
    "mode", [["pre_mcp_call", "post_call"], "pre_mcp_call", [SimpleNamespace(value="pre_mcp_call")]]
)
def test_a_mode_list_with_pre_mcp_call_is_accepted(mode: object) -> None:
    assert mode_error(mode) is None
    assert "pre_mcp_call" in hook_names(mode)


@pytest.mark.parametrize("flag", ["run_in_parallel", "scan_raw_request"])
def test_flags_that_discard_the_judged_arguments_are_refused_when_litellm_sets_them(
    flag: str,
) -> None:
    guard = ConfigGuard()
    setattr(guard, flag, False)  # LiteLLM's constructor default: fine
    assert getattr(guard, flag) is False
    with pytest.raises(ConfigError, match=f"{flag}: true is not supported"):
        setattr(guard, flag, True)
    assert getattr(guard, flag) is False


def test_a_configured_guardrail_checks_its_mode() -> None:
    guard = ConfigGuard()
    guard.event_hook = ["post_call"]  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="leaves out pre_mcp_call"):
        guard.check_litellm_settings()
