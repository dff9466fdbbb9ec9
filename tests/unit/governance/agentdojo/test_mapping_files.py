"""The committed per-suite descriptor mappings: each loads and covers its AgentDojo suite
exactly, and the loader refuses a missing tool, an extra tool or a bad field, naming the file
(and the line, where there is one)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from governance.agentdojo import (
    AGENTDOJO_SUITES,
    AgentDojoMappingError,
    load_agentdojo_mapping,
    mapping_path,
)


def _tool_block(text: str, tool: str) -> str:
    """The lines of one tool's entry in a committed mapping file (its key and indented body)."""
    found = re.search(rf"(?m)^  {tool}:\n(?:    .*\n)+", text)
    assert found is not None, tool
    return found.group()


@pytest.mark.parametrize("suite", AGENTDOJO_SUITES)
def test_every_committed_mapping_loads_and_covers_its_suite_exactly(
    suite: str, suites: dict[str, Any]
) -> None:
    mapping = load_agentdojo_mapping(mapping_path(suite))

    mapping.check_covers(tool.name for tool in suites[suite].tools)
    assert mapping.suite == suite
    assert len(mapping.tools) == len(suites[suite].tools)


@pytest.mark.parametrize("suite", AGENTDOJO_SUITES)
def test_an_external_action_is_mapped_with_an_external_side_effect(suite: str) -> None:
    mapping = load_agentdojo_mapping(mapping_path(suite))

    inconsistent = [
        name
        for name, facts in mapping.tools.items()
        if facts.action_type == "external" and not facts.external_side_effect
    ]
    assert inconsistent == []


def test_the_loader_refuses_a_file_that_misses_a_tool_of_the_suite(tmp_path: Path) -> None:
    committed = mapping_path("banking")
    text = committed.read_text(encoding="utf-8")
    names = set(load_agentdojo_mapping(committed).tools)
    edited = tmp_path / "banking.yaml"
    edited.write_text(text.replace(_tool_block(text, "send_money"), ""), encoding="utf-8")

    mapping = load_agentdojo_mapping(edited)
    with pytest.raises(AgentDojoMappingError) as caught:
        mapping.check_covers(names)

    assert str(edited) in str(caught.value)
    assert "does not map: send_money" in str(caught.value)


def test_the_loader_refuses_a_file_that_maps_a_tool_the_suite_does_not_have(
    tmp_path: Path,
) -> None:
    committed = mapping_path("banking")
    text = committed.read_text(encoding="utf-8")
    names = set(load_agentdojo_mapping(committed).tools)
    block = _tool_block(text, "get_balance")
    edited = tmp_path / "banking.yaml"
    edited.write_text(text + block.replace("get_balance:", "get_crypto_wallet:"), encoding="utf-8")

    mapping = load_agentdojo_mapping(edited)
    with pytest.raises(AgentDojoMappingError) as caught:
        mapping.check_covers(names)

    assert str(edited) in str(caught.value)
    assert "does not have: get_crypto_wallet" in str(caught.value)


@pytest.mark.parametrize(
    ("old", "new", "complaint"),
    [
        ("action_type: external", "action_type: payment", "action_type"),
        ("untrusted_output: false", "untrusted_output: maybe", "untrusted_output"),
        ("idempotent: false", "idempotnet: false", "idempotnet"),
    ],
)
def test_the_loader_refuses_a_bad_field_naming_the_file_and_its_line(
    tmp_path: Path, old: str, new: str, complaint: str
) -> None:
    text = mapping_path("banking").read_text(encoding="utf-8")
    block = _tool_block(text, "send_money")
    assert old in block
    edited = tmp_path / "banking.yaml"
    edited.write_text(text.replace(block, block.replace(old, new)), encoding="utf-8")
    line = text[: text.index(block)].count("\n") + block[: block.index(old)].count("\n") + 1

    with pytest.raises(AgentDojoMappingError) as caught:
        load_agentdojo_mapping(edited)

    message = str(caught.value)
    assert f"{edited}:{line}" in message
    assert f"send_money.{complaint}" in message


def test_the_loader_refuses_a_mapping_without_a_why(tmp_path: Path) -> None:
    text = mapping_path("slack").read_text(encoding="utf-8")
    block = _tool_block(text, "post_webpage")
    why = next(line for line in block.splitlines(keepends=True) if "why:" in line)
    edited = tmp_path / "slack.yaml"
    edited.write_text(text.replace(block, block.replace(why, "")), encoding="utf-8")

    with pytest.raises(AgentDojoMappingError) as caught:
        load_agentdojo_mapping(edited)

    assert "post_webpage.why" in str(caught.value)
