"""MCP annotations may only raise what the operator's mapping says, never lower it."""

from __future__ import annotations

import itertools

import mcp_types
import pytest

from governance.core._contracts import RISK_ORDER, ActionType, Risk
from governance.mcp._client import result_text
from governance.mcp._config import ToolMapping
from governance.mcp._mapping import (
    UNMAPPED,
    McpToolDefinition,
    build_descriptor,
    governed_facts,
    valid_tool_name,
)

SAFE_READ = ToolMapping("read", "low", reversible=True, external_side_effect=False, idempotent=True)
ALL_HINTS = ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint")


def _hints(**given: bool | None) -> dict[str, bool | None]:
    return {hint: given.get(hint) for hint in ALL_HINTS}


def test_destructive_hint_raises_risk_to_high_and_makes_the_tool_irreversible() -> None:
    facts = governed_facts(SAFE_READ, _hints(destructive_hint=True))
    assert facts.risk == "high"
    assert facts.reversible is False
    assert facts.action_type == "destructive"  # a rule allowing reads must not catch it


def test_destructive_hint_keeps_a_higher_risk_and_a_stricter_action_type() -> None:
    mapping = ToolMapping("external", "critical", True, False)
    facts = governed_facts(mapping, _hints(destructive_hint=True))
    assert (facts.action_type, facts.risk, facts.reversible) == ("external", "critical", False)
    unmapped = governed_facts(None, _hints(destructive_hint=True))
    assert unmapped.action_type == "unknown"  # unknown stays unknown: policy can only hold it


def test_open_world_hint_makes_the_side_effect_external() -> None:
    facts = governed_facts(SAFE_READ, _hints(open_world_hint=True))
    assert facts.external_side_effect is True
    assert (facts.action_type, facts.risk, facts.reversible) == ("read", "low", True)


def test_read_only_and_idempotent_hints_never_lower_anything_or_grant_a_retry() -> None:
    risky = ToolMapping("write", "high", reversible=False, external_side_effect=True)
    facts = governed_facts(
        risky,
        _hints(
            read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
    )
    assert facts == risky
    assert facts.idempotent is False
    assert governed_facts(None, _hints(read_only_hint=True, idempotent_hint=True)) == UNMAPPED


def test_an_absent_hint_leaves_the_mapping_as_it_is() -> None:
    assert governed_facts(SAFE_READ, {}) == SAFE_READ
    assert governed_facts(SAFE_READ, _hints()) == SAFE_READ


def test_an_unmapped_tool_gets_the_worst_facts() -> None:
    assert governed_facts(None, {}) == ToolMapping(
        "unknown", "high", reversible=False, external_side_effect=True, idempotent=False
    )


ACTIONS: tuple[ActionType, ...] = ("read", "write", "destructive", "external", "unknown")
RISKS: tuple[Risk, ...] = ("low", "medium", "high", "critical")
HINT_VALUES = (None, False, True)
_STRICTNESS = {"read": 0, "write": 1, "destructive": 2, "external": 2, "unknown": 3}


@pytest.mark.parametrize(
    ("action_type", "risk", "reversible", "external"),
    list(itertools.product(ACTIONS, RISKS, (True, False), (True, False))),
)
def test_no_combination_of_hints_ever_lowers_a_mapped_fact(
    action_type: ActionType, risk: Risk, reversible: bool, external: bool
) -> None:
    mapping = ToolMapping(action_type, risk, reversible, external, idempotent=False)
    for values in itertools.product(HINT_VALUES, repeat=4):
        facts = governed_facts(mapping, dict(zip(ALL_HINTS, values, strict=True)))
        assert RISK_ORDER[facts.risk] >= RISK_ORDER[risk]
        assert _STRICTNESS[facts.action_type] >= _STRICTNESS[action_type]
        assert facts.reversible <= reversible
        assert facts.external_side_effect >= external
        assert facts.idempotent is False


def test_a_descriptor_is_namespaced_and_passes_the_input_schema_through() -> None:
    schema = {
        "type": "object",
        "properties": {"repeatCount": {"type": "integer"}, "from-date": {"type": "string"}},
        "required": ["from-date"],
    }
    tool = McpToolDefinition(name="echo", description="Echo.", input_schema=schema)
    descriptor = build_descriptor("demo", tool, SAFE_READ)
    assert descriptor.name == "mcp.demo.echo"
    assert descriptor.namespace == "mcp.demo"
    assert descriptor.source == "mcp.demo"
    assert descriptor.input_schema == schema  # argument names preserved exactly
    assert descriptor.quarantine is None
    assert descriptor.impact == "read"
    quarantined = build_descriptor("demo", tool, SAFE_READ, quarantine="tool_definition_changed")
    assert quarantined.quarantine == "tool_definition_changed"


def test_a_destructive_annotation_makes_the_effective_impact_destructive() -> None:
    tool = McpToolDefinition(name="git_reset", annotations=_hints(destructive_hint=True))
    descriptor = build_descriptor("git", tool, ToolMapping("write", "low", True, False))
    assert descriptor.impact == "destructive"
    assert (descriptor.action_type, descriptor.risk) == ("destructive", "high")


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("echo", True),
        ("git_reset", True),
        ("get-time", True),
        ("a.b", False),
        ("a/b", False),
        ("", False),
        ("x" * 129, False),
        ("ünï", False),
    ],
)
def test_only_names_that_cannot_shift_the_namespace_are_registrable(name: str, ok: bool) -> None:
    assert valid_tool_name(name) is ok


def test_text_blocks_are_joined_and_structured_content_is_json_only_without_text() -> None:
    both = mcp_types.CallToolResult(
        content=[
            mcp_types.TextContent(type="text", text="a"),
            mcp_types.TextContent(type="text", text="b"),
        ],
        structured_content={"result": "ab"},
    )
    assert result_text(both) == "a\nb"
    only = mcp_types.CallToolResult(content=[], structured_content={"b": 1, "a": "é"})
    assert result_text(only) == '{"a": "é", "b": 1}'
    image = mcp_types.CallToolResult(
        content=[mcp_types.ImageContent(type="image", data="aGk=", mime_type="image/png")]
    )
    assert result_text(image) == "[image content: image/png, not shown]"
    assert "aGk=" not in result_text(image)
