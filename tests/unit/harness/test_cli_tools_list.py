"""`proctor tools list`: every tool, its arguments and facts, and the compiled policy's answer."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from governance.tools import builtin_registry
from harness import _exit_codes as codes
from harness.cli._app import cli

REPO = Path(__file__).resolve().parents[3]


def _listed(*args: str) -> list[dict[str, object]]:
    done = CliRunner().invoke(cli, ["tools", "list", "--json", *args])
    assert done.exit_code == codes.OK, done.output
    rows: list[dict[str, object]] = json.loads(done.stdout)
    return rows


def test_every_builtin_tool_is_listed_with_its_arguments_and_facts() -> None:
    rows = {str(r["name"]): r for r in _listed()}
    assert set(rows) == {d.name for d in builtin_registry().descriptors()}
    delete = rows["fs.delete"]
    assert delete["arguments"] == [{"name": "path", "required": True, "type": "string"}]
    assert (delete["action_type"], delete["risk"]) == ("destructive", "high")
    assert delete["decision"] == "block" and delete["decided_by"] == ["fs-no-delete"]


def test_the_policy_given_decides_and_its_rules_are_matched_by_name_namespace_and_glob(
    tmp_path: Path,
) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text(
        "version: 1\n"
        "rules:\n"
        "  - {id: read-by-name, effect: allow, match: {tool: [fs.read]}}\n"
        "  - {id: fs-namespace, effect: require_approval, match: {namespace: [fs]}}\n"
        "  - id: email-glob\n"
        "    effect: block\n"
        "    match: {tool: ['email.*']}\n"
        "    when: [{arg: to, regex: '.*@example.com'}]\n",
        encoding="utf-8",
    )
    rows = {str(r["name"]): r for r in _listed("--policy", str(policy))}
    read_rules = [r["id"] for r in rows["fs.read"]["rules"]]  # type: ignore[attr-defined]
    assert read_rules == ["fs-namespace", "read-by-name"]
    assert rows["fs.read"]["decision"] == "require_approval"
    email = rows["email.send"]["rules"]
    assert email == [  # the condition summarised; without arguments it does not hold
        {"by_name": False, "effect": "block", "id": "email-glob", "match": "tool=email.*",
         "when": ["to matches /.*@example.com/"]}
    ]  # fmt: skip
    assert rows["email.send"]["decision"] == "block"  # no allow rule: fail closed
    assert rows["orders.lookup"]["rules"] == []


def test_mcp_tools_are_listed_from_a_locked_config_without_starting_a_server() -> None:
    config = REPO / "scenarios" / "mcp" / "servers" / "demo.yaml"
    rows = {str(r["name"]) for r in _listed("--mcp-config", str(config))}
    assert {"mcp.demo.echo", "fs.read"} <= rows


def test_the_table_names_each_tool_once_with_the_policy_it_used() -> None:
    done = CliRunner().invoke(cli, ["tools", "list"])
    assert done.exit_code == codes.OK
    lines = [line.split()[0] for line in done.stdout.splitlines()[2:] if line[:1].isalpha()]
    assert lines == sorted(d.name for d in builtin_registry().descriptors())
    assert "policy the shipped policy (sha256:" in done.stdout
