"""The built-in tool surface: names and governance facts are pinned; the fs tools run for real."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from governance.core._contracts import Principal, ToolCall, ToolResult
from governance.tools import SEED_FILES, builtin_tools, file_tree
from governance.tools._local import LocalToolSource
from governance.tools._registry import ToolRegistry

# name: (action_type, risk, reversible, external_side_effect, idempotent)
FACTS: dict[str, tuple[str, str, bool, bool, bool]] = {
    "db.query": ("read", "medium", True, False, True),
    "email.send": ("external", "high", False, True, False),
    "fs.delete": ("destructive", "high", False, False, False),
    "fs.list": ("read", "low", True, False, True),
    "fs.move": ("write", "medium", True, False, False),
    "fs.read": ("read", "low", True, False, True),
    "fs.search": ("read", "low", True, False, True),
    "fs.write": ("write", "medium", True, False, False),
    "http.get": ("read", "medium", True, False, True),
    "kb.search": ("read", "low", True, False, True),
    "orders.lookup": ("read", "low", True, False, True),
    "refunds.create_draft": ("write", "medium", True, False, False),
    "tickets.create": ("write", "low", True, False, False),
}

ARGUMENTS: dict[str, tuple[list[str], list[str]]] = {  # name: (all properties, required)
    "db.query": (["sql"], ["sql"]),
    "email.send": (["body", "subject", "to"], ["body", "subject", "to"]),
    "fs.delete": (["path"], ["path"]),
    "fs.list": (["path"], []),
    "fs.move": (["destination", "source"], ["destination", "source"]),
    "fs.read": (["path"], ["path"]),
    "fs.search": (["path", "query"], ["query"]),
    "fs.write": (["content", "path"], ["content", "path"]),
    "http.get": (["url"], ["url"]),
    "kb.search": (["query", "top_k"], ["query"]),
    "orders.lookup": (["order_id"], ["order_id"]),
    "refunds.create_draft": (["amount", "order_id", "reason"], ["amount", "order_id", "reason"]),
    "tickets.create": (["body", "priority", "title"], ["body", "title"]),
}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return tmp_path / "ws"


@pytest.fixture
def source(ws: Path) -> LocalToolSource:
    return builtin_tools(ws)


def run(source: LocalToolSource, tool: str, /, **arguments: Any) -> ToolResult:
    return source.call(
        ToolCall(
            call_id="c1",
            tool=tool,
            arguments=arguments,
            run_id="run-1",
            principal=Principal(actor="alice", agent="bot", team="support"),
        )
    )


def test_the_builtin_surface_and_its_facts_are_pinned(source: LocalToolSource) -> None:
    facts = {
        d.name: (d.action_type, d.risk, d.reversible, d.external_side_effect, d.idempotent)
        for d in source.list_tools()
    }
    assert facts == FACTS
    assert {d.source for d in source.list_tools()} == {"local"}
    assert source.name == "local"


def test_irreversible_and_external_tools_have_destructive_impact(source: LocalToolSource) -> None:
    impacts = {d.name: d.impact for d in source.list_tools()}
    assert sorted(name for name, impact in impacts.items() if impact == "destructive") == [
        "email.send",
        "fs.delete",
    ]


def test_every_schema_forbids_extra_fields_and_describes_each_argument(
    source: LocalToolSource,
) -> None:
    for d in source.list_tools():
        schema = d.input_schema
        assert schema["type"] == "object", d.name
        assert schema["additionalProperties"] is False, d.name
        assert sorted(schema["properties"]) == ARGUMENTS[d.name][0], d.name
        assert sorted(schema.get("required", [])) == ARGUMENTS[d.name][1], d.name
        for prop, spec in schema["properties"].items():
            assert spec.get("description"), f"{d.name}.{prop} has no description"
        assert d.description, d.name


def test_the_builtin_source_registers_and_its_digest_is_stable(tmp_path: Path) -> None:
    one = ToolRegistry([builtin_tools(tmp_path / "a")])
    two = ToolRegistry([builtin_tools(tmp_path / "b")])
    assert len(one) == len(FACTS) == 13
    assert one.digest == two.digest


def test_schemas_are_plain_json(source: LocalToolSource) -> None:
    for d in source.list_tools():
        assert json.loads(json.dumps(d.input_schema)) == d.input_schema


def test_fs_tools_run_through_the_source_with_observable_effects(
    source: LocalToolSource, ws: Path
) -> None:
    assert run(source, "fs.list").output == "README.txt\nkb/\nnotes/\nreports/\nsecrets/"
    assert run(source, "fs.read", path="reports/q3.md").output == SEED_FILES["reports/q3.md"]
    assert run(source, "fs.search", query="SUMMARY").output == (
        "notes/todo.txt:2: - Draft the Q3 summary for the team"
    )
    assert run(source, "fs.write", path="out/summary.md", content="# S\n").ok
    assert run(source, "fs.move", source="out/summary.md", destination="summary.md").ok
    assert run(source, "fs.delete", path="secrets/api_keys.txt").ok
    expected = dict(SEED_FILES)
    del expected["secrets/api_keys.txt"]
    expected["summary.md"] = "# S\n"
    assert file_tree(ws) == expected


def test_a_refused_fs_call_is_a_failed_result_with_its_reason(
    source: LocalToolSource, ws: Path
) -> None:
    result = run(source, "fs.write", path="../escape.txt", content="x")
    assert (result.outcome, result.reason) == ("failed", "path_escapes_sandbox")
    assert not (ws / "escape.txt").exists()
    result = run(source, "fs.read", path="/etc/passwd")
    assert (result.outcome, result.reason, result.output) == ("failed", "path_escapes_sandbox", "")


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("fs.write", {"path": "big.txt", "content": "x" * 100_001}),
        ("fs.write", {"path": "a.txt"}),
        ("fs.write", {"path": "a.txt", "content": "x", "mode": "a"}),
        ("fs.search", {"query": ""}),
        ("fs.delete", {"path": ""}),
        ("fs.move", {"source": "README.txt"}),
        ("fs.list", {"path": 3}),
    ],
)
def test_invalid_fs_arguments_change_nothing(
    source: LocalToolSource, ws: Path, tool: str, arguments: dict[str, Any]
) -> None:
    result = run(source, tool, **arguments)
    assert (result.outcome, result.reason) == ("failed", "invalid_arguments")
    assert file_tree(ws) == SEED_FILES


def test_content_at_the_limit_is_accepted(source: LocalToolSource, ws: Path) -> None:
    assert run(source, "fs.write", path="big.txt", content="x" * 100_000).ok
    assert (ws / "files/big.txt").stat().st_size == 100_000


def test_validate_arguments_covers_every_builtin_without_running(
    source: LocalToolSource, ws: Path
) -> None:
    assert source.validate_arguments("fs.delete", {"path": "README.txt"}) is None
    email = {"to": "x@y.io", "subject": "", "body": ""}
    assert source.validate_arguments("email.send", email) is None
    assert source.validate_arguments("email.send", {"to": "x"}) is not None
    assert (ws / "files/README.txt").exists()


def test_the_descriptor_registry_is_built_without_seeding_a_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from governance.tools import _workspace, builtin_registry

    seeded = ToolRegistry([builtin_tools(tmp_path / "ws")])

    def refuse(*_: object) -> None:
        raise AssertionError("a descriptor registry must not seed files or a database")

    monkeypatch.setattr(_workspace, "create_database", refuse)
    monkeypatch.setattr(_workspace, "seed_files", refuse)
    registry = builtin_registry()
    assert registry.digest == seeded.digest
    assert sorted(d.name for d in registry.descriptors()) == sorted(FACTS)
