"""`proctor policy check|explain` through the real group and its exit-code contract."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import _exit_codes as codes
from harness.cli._app import cli

SHIPPED = str(resources.files("governance") / "data" / "default_policy.yaml")
READ = '{"action_type": "read", "risk": "low"}'

POLICY = """\
version: 1
rules:
  - id: reads
    description: reads are fine
    effect: allow
    match: {action_type: read}
    when:
      - arg: path
        path_prefix: reports/
  - id: hold-mail
    effect: require_approval
    match: {tool: email.send}
  - id: budget
    effect: block
    enabled: false
    match: {min_tokens_used: 10}
"""


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY, encoding="utf-8")
    return path


def test_check_lists_the_rules_and_prints_ok_with_the_digest(policy_file: Path) -> None:
    code, out, err = _run("policy", "check", str(policy_file))
    assert code == codes.OK, err
    header = out.splitlines()[0].split()
    assert header == ["id", "effect", "enabled", "match", "when"]
    assert "reads" in out and "path under reports/" in out and "action_type=read" in out
    assert "budget" in out and " no " in out
    assert out.rstrip().splitlines()[-1].startswith("OK: 3 rules, digest sha256:")


def test_check_accepts_the_shipped_policy() -> None:
    code, out, _ = _run("policy", "check", SHIPPED)
    assert code == codes.OK
    assert "fs-no-delete" in out and "OK: 16 rules" in out


def test_a_bad_policy_exits_3_and_names_file_and_line_on_stderr(policy_file: Path) -> None:
    policy_file.write_text(POLICY.replace("effect: block", "effect: stop"), encoding="utf-8")
    code, out, err = _run("policy", "check", str(policy_file))
    assert code == codes.INVALID_SUITE
    assert f"{policy_file}:14: rules[2].effect: Input should be" in err
    assert "OK" not in out


def test_a_missing_policy_file_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = _run("policy", "check", str(tmp_path / "absent.yaml"))
    assert code == codes.USAGE
    assert "does not exist" in err


def test_explain_prints_decision_matched_rules_and_reason(policy_file: Path) -> None:
    code, out, err = _run(
        "policy",
        "explain",
        str(policy_file),
        "--tool",
        "fs.read",
        "--args",
        '{"path": "reports/a.md"}',
        "--descriptor",
        READ,
    )
    assert code == codes.OK, err
    assert "decision:  allow" in out
    assert "reason:    allowed" in out
    assert "matched:   reads" in out
    assert "nothing was executed" in out


def test_explain_json_reports_a_failed_condition_as_invalid_argument(policy_file: Path) -> None:
    code, out, _ = _run(
        "policy",
        "explain",
        str(policy_file),
        "--tool",
        "fs.read",
        "--args",
        '{"path": "reports/../secrets.txt"}',
        "--descriptor",
        READ,
        "--json",
    )
    assert code == codes.OK
    result = json.loads(out)
    assert result["effect"] == "block"
    assert result["reason"] == "invalid_argument:path"
    assert result["matched_rule_ids"] == []
    statuses = {r["id"]: r["status"] for r in result["rules"]}
    assert statuses == {
        "reads": "condition_failed",
        "hold-mail": "not_matched",
        "budget": "disabled",
    }


def test_explain_of_an_unregistered_tool_uses_the_unknown_tool_context(policy_file: Path) -> None:
    code, out, _ = _run("policy", "explain", str(policy_file), "--tool", "shell.exec", "--json")
    assert code == codes.OK
    result = json.loads(out)
    assert (result["known"], result["effect"], result["reason"]) == (False, "block", "unknown_tool")


def test_explain_takes_built_in_tool_facts_unless_a_descriptor_overrides_them(
    policy_file: Path,
) -> None:
    base = ("policy", "explain", str(policy_file), "--tool", "orders.lookup", "--json")
    registered = json.loads(_run(*base)[1])
    # orders.lookup is registered as a read: the `reads` rule applies and wants a path.
    assert (registered["known"], registered["reason"]) == (True, "invalid_argument:path")
    write = '{"action_type": "write", "risk": "low"}'
    overridden = json.loads(_run(*base, "--descriptor", write)[1])
    assert overridden["reason"] == "no_matching_rule"
    assert overridden["registry_digest"] != registered["registry_digest"]


def test_explain_judges_omitted_arguments_by_their_schema_default() -> None:
    shipped = Path(__file__).resolve().parents[3] / "governance" / "data" / "default_policy.yaml"
    _, out, _ = _run("policy", "explain", str(shipped), "--tool", "fs.list", "--json")
    assert json.loads(out)["effect"] == "allow"  # `path` defaults to "." and is not a secret


def test_explain_passes_tokens_and_taint_into_the_context(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(
        "version: 1\nrules:\n"
        "  - {id: ok, effect: allow, match: {}}\n"
        "  - {id: spent, effect: block, match: {min_tokens_used: 100}}\n"
        "  - {id: taint, effect: require_approval, match: {tainted: true}}\n",
        encoding="utf-8",
    )
    base = ("policy", "explain", str(path), "--tool", "fs.read", "--descriptor", READ, "--json")
    assert json.loads(_run(*base)[1])["effect"] == "allow"
    assert json.loads(_run(*base, "--tainted")[1])["effect"] == "require_approval"
    spent = json.loads(_run(*base, "--tokens", "100")[1])
    assert (spent["effect"], spent["reason"]) == ("block", "token_budget_exceeded")


@pytest.mark.parametrize(
    ("option", "value", "fragment"),
    [
        ("--args", "{not json", "not valid JSON"),
        ("--args", "[1, 2]", "must be a JSON object"),
        ("--descriptor", '{"action_type": "reading", "risk": "low"}', "action_type"),
        ("--descriptor", '{"risk": "low"}', "action_type"),
        ("--descriptor", '{"action_type": "read", "risk": "low", "x": 1}', "x"),
        ("--tokens", "-5", "--tokens"),
    ],
)
def test_bad_explain_options_are_usage_errors(
    policy_file: Path, option: str, value: str, fragment: str
) -> None:
    code, out, err = _run("policy", "explain", str(policy_file), "--tool", "fs.read", option, value)
    assert code == codes.USAGE
    assert fragment in err
    assert "decision" not in out


def test_explain_with_a_broken_policy_exits_3(policy_file: Path) -> None:
    policy_file.write_text("version: 1\nrules: []\n", encoding="utf-8")
    code, _, err = _run("policy", "explain", str(policy_file), "--tool", "fs.read")
    assert code == codes.INVALID_SUITE
    assert f"{policy_file}:2:" in err


def test_explain_blocks_the_backslash_bypass_before_any_rule() -> None:
    from click.testing import CliRunner

    from harness.cli import cli

    shipped = str(Path(__file__).resolve().parents[3] / "governance/data/default_policy.yaml")
    for raw in ("secrets/a\\\\../../api_keys.txt", "notes/..\\\\..\\\\secrets/api_keys.txt"):
        result = CliRunner().invoke(
            cli,
            ["policy", "explain", shipped, "--tool", "fs.read", "--json", "--args",
             '{"path": "' + raw + '"}'],
        )
        assert result.exit_code == 0, result.output
        body = json.loads(result.output)
        assert (body["effect"], body["reason"]) == ("block", "invalid_argument:path")


def test_explain_judges_the_canonical_form_the_firewall_would_execute() -> None:
    from click.testing import CliRunner

    from harness.cli import cli

    shipped = str(Path(__file__).resolve().parents[3] / "governance/data/default_policy.yaml")
    result = CliRunner().invoke(
        cli,
        ["policy", "explain", shipped, "--tool", "fs.read", "--json", "--args",
         '{"path": "notes/../secrets/api_keys.txt"}'],
    )
    body = json.loads(result.output)
    assert (body["effect"], body["rule_ids"]) == ("block", ["fs-no-secrets"])
