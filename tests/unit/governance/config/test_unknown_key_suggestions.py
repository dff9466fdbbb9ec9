"""An unknown key in a policy or MCP config file is named at its line with the closest key the
schema allows at that place (not anywhere in the file), and with no guess when none is close."""

from __future__ import annotations

import pytest

from governance import PolicyError
from governance.config import did_you_mean
from governance.config._problems import allowed_keys
from governance.mcp import McpConfigError
from governance.mcp._config import parse_mcp_config
from governance.policy import parse_policy

POLICY = """\
version: 1
rules:
  - id: r1
    effect: allow
    match:
      tool: fs.read
    when:
      - arg: path
        path_prefix: notes/
"""


def _policy_error(old: str, new: str) -> str:
    assert old in POLICY
    with pytest.raises(PolicyError) as caught:
        parse_policy(POLICY.replace(old, new), "p.yaml")
    return str(caught.value)


def test_a_misspelt_condition_key_suggests_the_condition_key() -> None:
    message = _policy_error("path_prefix:", "path_prefx:")
    assert "p.yaml:9" in message
    assert "unknown key 'path_prefx' (did you mean 'path_prefix'?)" in message


def test_a_misspelt_rule_key_suggests_a_rule_key() -> None:
    message = _policy_error("    effect: allow", "    efect: allow")
    assert "p.yaml:4" in message and "(did you mean 'effect'?)" in message


def test_a_misspelt_top_level_key_suggests_a_top_level_key() -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(POLICY + "budgts: {}\n", "p.yaml")
    assert "p.yaml:10" in str(caught.value) and "(did you mean 'budgets'?)" in str(caught.value)


def test_a_suggestion_comes_only_from_the_keys_allowed_at_that_place() -> None:
    # `tool` is a key of `match`, not of a condition: no suggestion of it inside `when`.
    message = _policy_error("        path_prefix: notes/", "        tol: x")
    assert "unknown key 'tol'" in message and "did you mean" not in message


def test_a_key_close_to_nothing_gets_no_guess() -> None:
    message = _policy_error("    effect: allow", "    effect: allow\n    zzzzzz: 1")
    assert "unknown key 'zzzzzz'" in message and "did you mean" not in message


MCP = """\
version: 1
servers:
  time:
    transport: stdio
    command: python
    call_timeout: 30
    tools:
      get_current_time: {action_type: read, risk: low}
"""


def test_a_misspelt_mcp_server_key_suggests_the_server_key() -> None:
    with pytest.raises(McpConfigError) as caught:
        parse_mcp_config(MCP.replace("call_timeout", "call_timout"), "servers.yaml")
    message = str(caught.value)
    assert "servers.yaml:6" in message and "(did you mean 'call_timeout'?)" in message


def test_a_misspelt_mcp_tool_annotation_suggests_the_annotation() -> None:
    with pytest.raises(McpConfigError) as caught:
        parse_mcp_config(MCP.replace("risk: low", "rsk: low"), "servers.yaml")
    assert "(did you mean 'risk'?)" in str(caught.value)


def test_allowed_keys_follow_refs_unions_items_and_maps() -> None:
    schema = {
        "properties": {"rules": {"items": {"$ref": "#/$defs/R"}},
                       "m": {"additionalProperties": {"properties": {"z": {}}}}},
        "$defs": {"R": {"anyOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}]}},
    }  # fmt: skip
    assert allowed_keys(schema, ("rules", 0)) == {"a", "b"}
    assert allowed_keys(schema, ("m", "any-name")) == {"z"}
    assert allowed_keys(schema, ("nowhere",)) == set()


def test_did_you_mean_is_empty_without_a_close_choice() -> None:
    assert did_you_mean("path_prefx", ["path_prefix", "glob"]) == " (did you mean 'path_prefix'?)"
    assert did_you_mean("qqq", ["path_prefix"]) == ""
