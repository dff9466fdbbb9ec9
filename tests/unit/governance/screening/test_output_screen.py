"""Secrets in tool outputs and errors: masked by default, withheld or let through by policy,
screened inside the firewall before the result leaves it, and recorded (never the secret)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from governance import PolicyError, Principal, ToolCall, ToolDescriptor, ToolRegistry, ToolResult
from governance._firewall import Firewall, StaticPolicy
from governance.policy._load import parse_policy
from governance.screening._output_secrets import OutputPolicy, screen_secrets
from governance.stores._audit import AuditLog
from tests.fake_secrets import ALL, CONFIG_DUMP, GITHUB, leaked

RULES = """
version: 1
rules:
  - id: allow-all-demo
    effect: allow
    match: {tool: "demo.*"}
"""
PRINCIPAL = Principal("ann", "bot", "ops")


class SecretSource:
    """`demo.dump` returns a config dump; `demo.fail` fails with one; `demo.raise` raises one."""

    name = "demo"

    def list_tools(self) -> list[ToolDescriptor]:
        return [
            ToolDescriptor(
                name=name,
                description=name,
                input_schema={"type": "object"},
                source="demo",
                action_type="read",
                risk="low",
                reversible=True,
                external_side_effect=False,
                idempotent=True,
            )
            for name in ("demo.dump", "demo.fail", "demo.raise")
        ]

    def call(self, call: ToolCall) -> ToolResult:
        if call.tool == "demo.raise":
            raise RuntimeError(f"could not connect with token {GITHUB}")
        if call.tool == "demo.fail":
            return ToolResult(
                call.call_id, call.tool, "failed", error=CONFIG_DUMP, reason="tool_error"
            )
        return ToolResult(call.call_id, call.tool, "executed", output=CONFIG_DUMP)


@pytest.fixture
def audit(tmp_path: Path):  # type: ignore[no-untyped-def]
    log = AuditLog(tmp_path / "audit.sqlite")
    yield log
    log.close()


def _run(audit: AuditLog, tool: str, outputs: str = "") -> ToolResult:
    policy = parse_policy(RULES + outputs)
    firewall = Firewall(ToolRegistry([SecretSource()]), StaticPolicy(policy), audit)
    return firewall.call(ToolCall("c1", tool, {}, "run-1", PRINCIPAL))


def _outcome_data(audit: AuditLog) -> dict[str, Any]:
    (event,) = [
        e for e in audit.events("run-1") if e.kind in ("execution.completed", "execution.failed")
    ]
    return dict(event.data)


def test_by_default_every_secret_in_a_tool_output_is_masked_before_it_leaves_the_firewall(
    audit: AuditLog,
) -> None:
    result = _run(audit, "demo.dump")
    assert result.outcome == "executed"
    assert leaked(result.output) == []
    assert "STAGING_API_KEY=" in result.output and "region eu-west-1" in result.output
    assert _outcome_data(audit)["redaction"] == {
        "policy": "mask",
        "action": "masked",
        "count": 4,
    }


def test_the_audit_chain_records_the_masking_but_never_the_secret(audit: AuditLog) -> None:
    _run(audit, "demo.dump")
    _run(audit, "demo.fail")
    stored = repr([(e.kind, e.data) for e in audit.events("run-1")])
    assert leaked(stored) == []
    assert audit.verify("run-1").ok


def test_a_failed_calls_error_text_is_masked_too(audit: AuditLog) -> None:
    result = _run(audit, "demo.fail")
    assert result.outcome == "failed" and result.error is not None
    assert leaked(result.error) == []
    assert _outcome_data(audit)["redaction"]["action"] == "masked"


def test_the_message_of_a_source_that_raises_is_masked(audit: AuditLog) -> None:
    result = _run(audit, "demo.raise")
    assert result.outcome == "failed" and result.reason == "tool_error"
    assert result.error is not None and "RuntimeError" in result.error
    assert GITHUB not in result.error


def test_block_withholds_the_whole_output_but_the_call_still_counts_as_executed(
    audit: AuditLog,
) -> None:
    result = _run(audit, "demo.dump", "outputs:\n  tools:\n    demo.dump: block\n")
    assert result.outcome == "executed"
    assert leaked(result.output) == []
    assert "withheld" in result.output and "region eu-west-1" not in result.output
    assert _outcome_data(audit)["redaction"] == {
        "policy": "block",
        "action": "withheld",
        "count": 4,
    }


def test_allow_lets_the_secrets_through_and_says_so_on_the_chain(audit: AuditLog) -> None:
    result = _run(audit, "demo.dump", "outputs: {secrets: allow}\n")
    assert result.output == CONFIG_DUMP
    data = _outcome_data(audit)
    assert data["redaction"] == {"policy": "allow", "action": "allowed", "count": 4}
    assert leaked(repr(data)) == []


def test_an_output_without_secrets_passes_unchanged_and_records_nothing(
    audit: AuditLog,
) -> None:
    result = screen_secrets(
        ToolResult("c1", "demo.dump", "executed", output="order ORD-1 shipped"), OutputPolicy()
    )
    assert result == (ToolResult("c1", "demo.dump", "executed", output="order ORD-1 shipped"), None)


@pytest.mark.parametrize(
    ("tools", "tool", "expected"),
    [
        ({}, "kb.search", "mask"),
        ({"kb.*": "allow"}, "kb.search", "allow"),
        ({"kb.*": "allow"}, "fs.read", "mask"),
        # The strictest matching entry wins, whatever the order: a glob cannot be carved out.
        ({"kb.*": "block", "kb.search": "allow"}, "kb.search", "block"),
        ({"kb.search": "allow", "kb.*": "block"}, "kb.search", "block"),
        ({"*": "allow", "mcp.docs.*": "mask"}, "mcp.docs.read", "mask"),
    ],
)
def test_the_strictest_matching_entry_decides_and_the_default_applies_only_when_none_does(
    tools: dict[str, str], tool: str, expected: str
) -> None:
    entries = "".join(f'    "{k}": {v}\n' for k, v in tools.items())
    text = RULES + "outputs:\n  secrets: mask\n" + (f"  tools:\n{entries}" if entries else "")
    assert parse_policy(text).outputs.action_for(tool) == expected


def test_a_policy_without_an_outputs_section_masks_everything() -> None:
    outputs = parse_policy(RULES).outputs
    assert outputs == OutputPolicy() and outputs.action_for("anything.at_all") == "mask"


@pytest.mark.parametrize(
    ("section", "line", "words"),
    [
        ("outputs:\n  secrets: redact\n", 8, "'mask', 'block' or 'allow'"),
        ("outputs:\n  tools:\n    fs.read: off\n", 9, "'mask', 'block' or 'allow'"),
        ("outputs:\n  secret: allow\n", 8, "unknown key 'secret'"),
        ("outputs:\n  secrets: [mask]\n", 8, "'mask', 'block' or 'allow'"),
    ],
)
def test_an_unknown_outputs_setting_is_refused_at_load_with_file_and_line(
    section: str, line: int, words: str
) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(RULES + section, "policy.yaml")
    assert f"policy.yaml:{line}" in str(caught.value)
    assert words in str(caught.value)


def test_every_fake_secret_is_one_the_redactor_masks() -> None:
    # Guards the tests above: each secret really is secret-shaped for the redactor.
    for secret in ALL:
        assert leaked(screen_secrets(
            ToolResult("c1", "t", "executed", output=secret), OutputPolicy()
        )[0].output) == []
