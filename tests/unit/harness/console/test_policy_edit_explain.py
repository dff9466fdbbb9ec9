"""`explain` for a sample call: what `proctor policy explain --json` prints, for the file in
force or for a draft not yet saved. Nothing is executed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from governance import Gateway
from governance.stores import MemoryAuditLog
from governance.tools import builtin_registry
from harness.cli._app import cli
from harness.cli._options import shipped_policy_path
from harness.console._policy_edit import PolicyEditor, SampleCall
from tests.unit.harness.console.policy_editing import POLICY

SAMPLES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("fs.read", {"path": "notes/todo.txt"}, {}),
    ("fs.read", {"path": "secrets/api_keys.txt"}, {}),
    ("fs.read", {"path": "notes\\..\\secrets\\api_keys.txt"}, {}),  # refused before any rule
    ("fs.list", {}, {}),
    ("fs.delete", {"path": "notes/todo.txt"}, {"actor": "ann", "agent": "cleaner"}),
    ("email.send", {"to": "a@example.com", "subject": "s", "body": "b"}, {"tainted": True}),
    ("db.query", {"sql": "SELECT 1"}, {"tokens_used": 90_000}),
    ("shell.exec", {"cmd": "rm -rf /"}, {}),  # not registered
]


def _cli_json(policy: Path, tool: str, arguments: dict[str, Any], facts: dict[str, Any]) -> Any:
    argv = ["policy", "explain", str(policy), "--tool", tool, "--args", json.dumps(arguments)]
    for option, key in (("--actor", "actor"), ("--agent", "agent"), ("--team", "team"),
                        ("--tokens", "tokens_used")):  # fmt: skip
        argv += [option, str(facts.get(key, "console" if key != "tokens_used" else 0))]
    if facts.get("tainted"):
        argv.append("--tainted")
    result = CliRunner().invoke(cli, [*argv, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize(("tool", "arguments", "facts"), SAMPLES)
def test_explain_gives_what_proctor_policy_explain_prints(
    tool: str, arguments: dict[str, Any], facts: dict[str, Any]
) -> None:
    editor = PolicyEditor(policy_path=None, registry=builtin_registry(), audit=MemoryAuditLog())
    body = editor.explain(SampleCall(tool, arguments, **facts))
    assert body["ok"] is True
    assert body["explanation"] == _cli_json(shipped_policy_path(), tool, arguments, facts)


def test_the_gateways_registry_explains_as_the_cli_does(
    gateway: Gateway, policy_path: Path
) -> None:
    editor = PolicyEditor.for_gateway(gateway, policy_path)
    for tool, arguments, facts in SAMPLES:
        body = editor.explain(SampleCall(tool, arguments, **facts))
        assert body["explanation"] == _cli_json(policy_path, tool, arguments, facts)


def test_a_draft_is_explained_without_touching_the_file(
    editor: PolicyEditor, policy_path: Path
) -> None:
    sample = SampleCall("fs.read", {"path": "notes/todo.txt"})
    draft = POLICY.replace("effect: allow", "effect: require_approval")
    now = editor.explain(sample)["explanation"]
    then = editor.explain(sample, draft)["explanation"]
    assert (now["effect"], now["rule_ids"]) == ("allow", ["read-notes"])
    assert (then["effect"], then["matched_rule_ids"]) == ("require_approval", ["read-notes"])
    assert then["reason"] == "approval_required"
    assert policy_path.read_text(encoding="utf-8") == POLICY


def test_a_draft_that_does_not_parse_returns_its_problems_not_a_decision(
    editor: PolicyEditor,
) -> None:
    body = editor.explain(SampleCall("fs.read"), POLICY.replace("effect: allow", "effect: ok"))
    assert body["ok"] is False and "explanation" not in body
    assert [p["kind"] for p in body["problems"]] == ["schema"]
    assert body["problems"][0]["line"] == 7


def test_explaining_a_deleted_file_says_it_is_gone(editor: PolicyEditor, policy_path: Path) -> None:
    policy_path.unlink()
    body = editor.explain(SampleCall("fs.read"))
    assert body["ok"] is False and "is gone" in body["error"]


@pytest.mark.parametrize(
    ("typed", "complaint"),
    [("{not json", "not valid JSON"), ("[1, 2]", "JSON object"), ('"path"', "JSON object")],
)
def test_arguments_typed_on_the_page_must_be_a_json_object(typed: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        SampleCall.from_json_arguments("fs.read", typed)
    sample = SampleCall.from_json_arguments("fs.read", '{"path": "a"}', actor="ann")
    assert (sample.arguments, sample.actor) == ({"path": "a"}, "ann")
