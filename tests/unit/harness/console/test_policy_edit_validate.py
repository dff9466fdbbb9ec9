"""Validation as the operator types: `proctor policy check`'s findings, each at its line."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from governance.stores import MemoryAuditLog
from governance.tools import builtin_registry
from harness import _exit_codes as codes
from harness.cli._app import cli
from harness.cli._options import shipped_policy_path
from harness.console._policy_edit import PolicyEditor
from tests.unit.harness.console.policy_editing import POLICY

YAML_ERROR = POLICY.replace("    effect: allow\n", "    effect: [allow\n")
SCHEMA_ERRORS = POLICY.replace("effect: allow", "effect: allw").replace("    when:", "    wen:")
CONTRACT_ERRORS = POLICY.replace("tool: fs.read", "tool: [fs.reed, fs.read]") + (
    "  - id: no-such-namespace\n    effect: block\n    match: {namespace: shel}\n"
)


def _lines(text: str, needle: str) -> list[int]:
    return [n for n, line in enumerate(text.splitlines(), start=1) if needle in line]


def test_the_shipped_policy_and_the_fixture_validate_clean(editor: PolicyEditor) -> None:
    for text in (shipped_policy_path().read_text(encoding="utf-8"), POLICY):
        verdict = editor.validate(text)
        assert verdict.ok and verdict.problems == () and verdict.notes == ()
    assert editor.validate(POLICY).as_json()["rules"] == 1


def test_a_yaml_syntax_error_is_reported_at_its_line(editor: PolicyEditor) -> None:
    verdict = editor.validate(YAML_ERROR)
    assert not verdict.ok
    [problem] = verdict.problems
    assert problem.kind == "yaml"
    assert problem.line is not None and problem.line >= _lines(YAML_ERROR, "[allow")[0]
    assert "invalid YAML" in problem.message


def test_a_character_yaml_refuses_is_reported_with_its_line_and_column(
    editor: PolicyEditor,
) -> None:
    text = POLICY.replace("version: 1", "version: 1\x07")
    [problem] = editor.validate(text).problems
    assert (problem.kind, problem.line, problem.column) == ("yaml", 2, len("version: 1") + 1)


def test_every_schema_error_is_reported_at_its_own_line(editor: PolicyEditor) -> None:
    verdict = editor.validate(SCHEMA_ERRORS)
    found = {(p.line, p.kind) for p in verdict.problems}
    assert (_lines(SCHEMA_ERRORS, "effect: allw")[0], "schema") in found
    assert (_lines(SCHEMA_ERRORS, "wen:")[0], "schema") in found
    assert any("unknown key 'wen'" in p.message and "did you mean" in p.message
               for p in verdict.problems)  # fmt: skip


def test_unknown_tool_names_are_contract_errors_at_their_lines(editor: PolicyEditor) -> None:
    verdict = editor.validate(CONTRACT_ERRORS)
    assert [(p.kind, p.line) for p in verdict.problems] == [
        ("contract", _lines(CONTRACT_ERRORS, "fs.reed")[0]),
        ("contract", _lines(CONTRACT_ERRORS, "namespace: shel")[0]),
    ]
    assert "'fs.reed' is not a known tool (did you mean 'fs.read'?)" in verdict.problems[0].message


def test_the_problems_are_the_ones_proctor_policy_check_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    editor = PolicyEditor(
        policy_path=tmp_path / "team.yaml", registry=builtin_registry(), audit=MemoryAuditLog()
    )
    for text in (YAML_ERROR, SCHEMA_ERRORS, CONTRACT_ERRORS):
        Path("team.yaml").write_text(text, encoding="utf-8")
        result = CliRunner().invoke(cli, ["policy", "check", "team.yaml"])
        assert result.exit_code == codes.INVALID_SUITE
        problems = editor.validate(text).problems
        assert problems
        for problem in problems:
            assert f"team.yaml:{problem.line}: {problem.message}" in result.stderr


def test_more_than_ten_problems_end_with_a_count_for_the_whole_file(editor: PolicyEditor) -> None:
    rules = "".join(
        f"  - id: r{n}\n    effect: allow\n    match: {{tool: fs.nope{n}}}\n" for n in range(13)
    )
    verdict = editor.validate(f"version: 1\nrules:\n{rules}")
    assert [p.line for p in verdict.problems] == [5 + 3 * n for n in range(10)] + [None]
    assert verdict.problems[-1].message == "... and 3 more problems"


def test_an_empty_draft_is_a_problem_and_is_marked_empty(editor: PolicyEditor) -> None:
    for text in ("", "   \n", "# only a comment\n"):
        verdict = editor.validate(text)
        assert not verdict.ok and verdict.empty
    assert not editor.validate("version: 1\n").empty


def test_mcp_names_are_notes_without_mcp_servers_and_errors_when_known(
    policy_path: Path,
) -> None:
    text = POLICY + "  - id: echo\n    effect: allow\n    match: {tool: mcp.demo.echo}\n"
    plain = PolicyEditor(policy_path=policy_path, registry=builtin_registry(),
                         audit=MemoryAuditLog())  # fmt: skip
    verdict = plain.validate(text)
    assert verdict.ok and len(verdict.notes) == 1 and "mcp.demo.echo" in verdict.notes[0]
    known = PolicyEditor(policy_path=policy_path, registry=builtin_registry(),
                         audit=MemoryAuditLog(), mcp_known=True)  # fmt: skip
    assert [p.kind for p in known.validate(text).problems] == ["contract"]


def test_the_json_shape_the_page_reads(editor: PolicyEditor) -> None:
    body = editor.validate(CONTRACT_ERRORS).as_json()
    assert set(body) == {"ok", "problems", "notes", "rules", "policy_digest"}
    assert body["ok"] is False
    assert set(body["problems"][0]) == {"line", "column", "message", "kind"}
    clean = editor.validate(POLICY).as_json()
    assert clean["ok"] is True and str(clean["policy_digest"]).startswith("sha256:")


def _gateway_with_mcp(states: list[str]) -> Any:
    """The three things `for_gateway` reads from a gateway, with MCP servers in `states`."""
    sources = [SimpleNamespace(status=SimpleNamespace(state=state)) for state in states]
    return SimpleNamespace(
        mcp_sources=tuple(sources), registry=builtin_registry(), audit=MemoryAuditLog()
    )


@pytest.mark.parametrize(
    ("states", "judged"), [([], False), (["up"], True), (["up", "failed"], False)]
)
def test_mcp_names_are_judged_only_when_every_mcp_server_of_the_gateway_is_up(
    policy_path: Path, states: list[str], judged: bool
) -> None:
    editor = PolicyEditor.for_gateway(_gateway_with_mcp(states), policy_path)
    text = POLICY + "  - id: echo\n    effect: allow\n    match: {tool: mcp.demo.echo}\n"
    verdict = editor.validate(text)
    assert (verdict.ok, len(verdict.notes)) == ((False, 0) if judged else (True, 1))
