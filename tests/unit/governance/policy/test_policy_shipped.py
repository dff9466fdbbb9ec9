"""The committed policy schema and the shipped default policy for the built-in tools."""

from __future__ import annotations

import json
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from governance import PolicyContext, Principal, RunUsage, ToolCall, ToolDescriptor
from governance.policy._compile import Policy
from governance.policy._eval import evaluate
from governance.policy._load import load_policy, policy_json_schema
from governance.policy._model import (
    SCHEMA_COMMAND,
    SCHEMA_PATH,
    render_policy_schema,
    write_policy_schema,
)

ROOT = Path(__file__).resolve().parents[4]
DEFAULT_POLICY = Path(str(resources.files("governance") / "data" / "default_policy.yaml"))

# The built-in demo tools' governance facts: (action_type, risk, reversible, external).
BUILTIN: dict[str, tuple[str, str, bool, bool]] = {
    "fs.list": ("read", "low", True, False),
    "fs.read": ("read", "low", True, False),
    "fs.search": ("read", "low", True, False),
    "fs.write": ("write", "medium", True, False),
    "fs.move": ("write", "medium", True, False),
    "fs.delete": ("destructive", "high", False, False),
    "kb.search": ("read", "low", True, False),
    "orders.lookup": ("read", "low", True, False),
    "refunds.create_draft": ("write", "medium", True, False),
    "tickets.create": ("write", "low", True, False),
    "email.send": ("external", "high", False, True),
}


def test_the_committed_schema_matches_the_models() -> None:
    committed = SCHEMA_PATH.read_text(encoding="utf-8")
    assert committed == render_policy_schema(), (
        f"governance/data/policy.schema.json is stale: regenerate it with `{SCHEMA_COMMAND}`"
    )


def test_the_schema_writer_produces_the_rendered_schema(tmp_path: Path) -> None:
    written = write_policy_schema(tmp_path / "nested" / "policy.schema.json")
    assert written.read_text(encoding="utf-8") == render_policy_schema()
    schema = json.loads(written.read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == "Proctor policy"
    assert schema == policy_json_schema()


def _schema_errors(document: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(policy_json_schema())
    return [e.message for e in validator.iter_errors(document)]


def test_the_schema_accepts_the_shipped_policy_and_refuses_an_allow_default() -> None:
    jsonschema.Draft202012Validator.check_schema(policy_json_schema())
    document = yaml.safe_load(DEFAULT_POLICY.read_text(encoding="utf-8"))
    assert _schema_errors(document) == []
    document["defaults"]["unknown_tool"] = "allow"
    assert _schema_errors(document)
    document["defaults"]["unknown_tool"] = "block"
    document["rules"][0]["match"]["colour"] = "red"
    assert _schema_errors(document)


def test_policy_data_ships_in_the_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "data/*" in config["tool"]["setuptools"]["package-data"]["governance"]
    assert DEFAULT_POLICY.is_file()
    assert (DEFAULT_POLICY.parent / "policy.schema.json").is_file()


@pytest.fixture(scope="module")
def shipped() -> Policy:
    return load_policy(DEFAULT_POLICY)


def _decide(
    policy: Policy, tool: str, arguments: dict[str, Any], *, tokens: int = 0
) -> tuple[str, tuple[str, ...], str]:
    facts = BUILTIN.get(tool)
    descriptor = None
    if facts is not None:
        action_type, risk, reversible, external = facts
        descriptor = ToolDescriptor(
            name=tool,
            description=tool,
            input_schema={},
            source="local",
            action_type=action_type,  # type: ignore[arg-type]
            risk=risk,  # type: ignore[arg-type]
            reversible=reversible,
            external_side_effect=external,
            idempotent=False,
        )
    call = ToolCall("c1", tool, arguments, "run-1", Principal("ann", "bot", "ops"))
    context = PolicyContext.for_call(
        call, descriptor, registry_digest="sha256:r", usage=RunUsage(tokens_used=tokens)
    )
    decision = evaluate(context, policy)
    return decision.effect, decision.rule_ids, decision.reason


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("fs.list", {"path": "."}, ("allow", ("fs-read",), "allowed")),
        ("fs.read", {"path": "reports/q3.md"}, ("allow", ("fs-read",), "allowed")),
        ("fs.search", {"query": "x", "path": "notes"}, ("allow", ("fs-search-notes",), "allowed")),
        (
            "fs.search",  # the default path "." would search secrets/ too
            {"query": "KEY", "path": "."},
            (
                "block",
                ("fs-no-secrets", "fs-search-notes", "fs-search-reports"),
                "invalid_argument:path",
            ),
        ),
        (
            "fs.read",
            {"path": "secrets/api_key.txt"},
            ("block", ("fs-no-secrets",), "blocked_by_rule"),
        ),
        (
            "fs.read",
            {"path": "reports/../secrets/k"},
            ("block", ("fs-no-secrets",), "blocked_by_rule"),
        ),
        ("fs.list", {"path": "secrets"}, ("block", ("fs-no-secrets",), "blocked_by_rule")),
        (
            "fs.read",
            {"path": "/etc/passwd"},  # unjudgeable, so the restrictive rule applies
            ("block", ("fs-no-secrets",), "blocked_by_rule"),
        ),
        (
            "fs.read",
            {"path": "../outside"},  # unjudgeable, so the restrictive rule applies
            ("block", ("fs-no-secrets",), "blocked_by_rule"),
        ),
        (
            "fs.read",
            {"path": "SECRETS/k"},  # unjudgeable, so the restrictive rule applies
            ("block", ("fs-no-secrets",), "blocked_by_rule"),
        ),
        (
            "fs.write",
            {"path": "reports/out.md", "content": "x"},
            ("allow", ("fs-write-reports",), "allowed"),
        ),
        (
            "fs.write",
            {"path": "notes/out.md", "content": "x"},
            ("block", ("fs-no-secrets", "fs-write-reports"), "invalid_argument:path"),
        ),
        (
            "fs.write",
            # Judged raw, a non-canonical path is unjudgeable: the restrictive rule applies.
            # (Through the firewall it is canonicalised to notes/x first.)
            {"path": "reports/../notes/x", "content": "x"},
            ("block", ("fs-no-secrets",), "blocked_by_rule"),
        ),
        (
            "fs.write",
            {"path": "secrets/k", "content": "x"},
            ("block", ("fs-no-secrets",), "blocked_by_rule"),
        ),
        (
            "fs.move",
            {"source": "reports/a", "destination": "reports/b"},
            ("allow", ("fs-move-within-reports",), "allowed"),
        ),
        (
            "fs.move",
            {"source": "reports/a", "destination": "notes/a"},
            ("block", ("fs-move-within-reports", "fs-no-secrets"), "invalid_argument:destination"),
        ),
        (
            "fs.move",
            {"source": "secrets/k", "destination": "reports/k"},
            ("block", ("fs-move-within-reports", "fs-no-secrets"), "invalid_argument:source"),
        ),
        ("fs.delete", {"path": "reports/a"}, ("block", ("fs-no-delete",), "blocked_by_rule")),
        (
            "email.send",
            {"to": "a@example.com"},
            ("require_approval", ("email-needs-approval",), "approval_required"),
        ),
        ("orders.lookup", {"order_id": "ORD-0001"}, ("allow", ("orders-lookup",), "allowed")),
        ("kb.search", {"query": "refund window"}, ("allow", ("kb-search",), "allowed")),
        ("tickets.create", {"title": "x"}, ("allow", ("tickets-create",), "allowed")),
        ("refunds.create_draft", {"amount": 40.5}, ("allow", ("refunds-small",), "allowed")),
        ("refunds.create_draft", {"amount": 100}, ("allow", ("refunds-small",), "allowed")),
        (
            "refunds.create_draft",
            {"amount": 100.01},
            ("require_approval", ("refunds-large-need-approval",), "approval_required"),
        ),
        (
            "refunds.create_draft",
            {"amount": "50"},  # not a number: the approval rule applies, never the allow
            ("require_approval", ("refunds-large-need-approval",), "approval_required"),
        ),
        (
            "refunds.create_draft",
            {},
            ("block", ("refunds-large-need-approval", "refunds-small"), "invalid_argument:amount"),
        ),
        ("shell.exec", {"command": "rm -rf /"}, ("block", (), "unknown_tool")),
    ],
)
def test_the_shipped_policy_decides_the_builtin_tools_as_documented(
    shipped: Policy, tool: str, arguments: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    assert _decide(shipped, tool, arguments) == expected


def test_the_shipped_token_budget_blocks_every_call_once_spent(shipped: Policy) -> None:
    assert _decide(shipped, "orders.lookup", {}, tokens=49_999)[0] == "allow"
    assert _decide(shipped, "orders.lookup", {}, tokens=50_000) == (
        "block",
        ("token-budget",),
        "token_budget_exceeded",
    )


def test_the_shipped_policy_covers_every_builtin_tool_and_describes_every_rule(
    shipped: Policy,
) -> None:
    assert all(rule.description for rule in shipped.rules)
    assert shipped.defaults.unknown_tool == "block"
    for tool in BUILTIN:
        assert _decide(shipped, tool, {})[2] != "no_matching_rule", tool
