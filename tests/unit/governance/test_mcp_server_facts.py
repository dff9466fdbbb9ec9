"""The governance facts each published tool carries, derived from the rules, and the result map."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import mcp_types as types
import pytest

from governance import Decision, Policy, ToolDescriptor, ToolResult, load_policy
from governance._gateway import Gateway
from governance._mcp_server import governance_facts, http_security, tool_result


def _descriptor(gateway: Gateway, name: str) -> ToolDescriptor:
    descriptor = gateway.registry.get(name)
    assert descriptor is not None
    return descriptor


def _policy(tmp_path: Path, rules: str) -> Policy:
    path = tmp_path / "policy.yaml"
    path.write_text(
        "version: 1\ndefaults: {unknown_tool: block, no_match: block}\nrules:\n" + rules,
        encoding="utf-8",
    )
    return load_policy(path)


@pytest.mark.parametrize(
    ("tool", "approval", "always_blocked"),
    [
        ("email.send", "always", False),  # email-needs-approval applies to every call
        ("refunds.create_draft", "maybe", False),  # only over 100 (or in a tainted run)
        ("fs.write", "maybe", False),  # only in a tainted run
        ("orders.lookup", "never", False),
        ("fs.read", "never", False),  # allowed only with a path condition: not "blocked"
        ("fs.delete", "never", True),  # fs-no-delete blocks unconditionally
    ],
)
def test_the_approval_hint_follows_the_shipped_rules(
    governed: Gateway, tool: str, approval: str, always_blocked: bool
) -> None:
    facts = governance_facts(_descriptor(governed, tool), governed.policy.current())
    assert (facts.approval, facts.always_blocked) == (approval, always_blocked)
    meta = facts.meta()
    assert meta["approval"] == approval and meta["always_blocked"] is always_blocked
    assert f"approval={approval}" in facts.prefix()
    assert ("blocked=always" in facts.prefix()) is always_blocked


def test_the_prefix_names_action_risk_and_effective_impact(governed: Gateway) -> None:
    facts = governance_facts(_descriptor(governed, "email.send"), governed.policy.current())
    # email.send is declared `external`; its effective impact is destructive.
    assert facts.prefix() == (
        "[proctor: action=external risk=high impact=destructive approval=always]"
    )
    assert facts.approval_rules == ("email-needs-approval", "tainted-changes-need-approval")


def test_a_tool_no_rule_can_allow_is_published_as_always_blocked(
    governed: Gateway, tmp_path: Path
) -> None:
    policy = _policy(tmp_path, "  - {id: orders, effect: allow, match: {tool: orders.lookup}}\n")
    facts = governance_facts(_descriptor(governed, "fs.read"), policy)
    assert facts.always_blocked and facts.approval == "never"
    allowed = governance_facts(_descriptor(governed, "orders.lookup"), policy)
    assert not allowed.always_blocked


def test_an_unmapped_tool_that_a_rule_allows_still_needs_approval(
    governed: Gateway, tmp_path: Path
) -> None:
    policy = _policy(tmp_path, "  - {id: everything, effect: allow, match: {namespace: orders}}\n")
    unmapped = replace(_descriptor(governed, "orders.lookup"), action_type="unknown")
    facts = governance_facts(unmapped, policy)
    assert facts.approval == "always" and not facts.always_blocked


def test_a_disabled_rule_does_not_count(governed: Gateway, tmp_path: Path) -> None:
    policy = _policy(
        tmp_path,
        "  - {id: ok, effect: allow, match: {tool: email.send}}\n"
        "  - {id: ask, effect: require_approval, enabled: false, match: {tool: email.send}}\n",
    )
    facts = governance_facts(_descriptor(governed, "email.send"), policy)
    assert facts.approval == "never" and facts.approval_rules == ()


def test_no_policy_or_a_quarantine_publishes_the_tool_as_blocked(governed: Gateway) -> None:
    descriptor = _descriptor(governed, "orders.lookup")
    assert governance_facts(descriptor, None).always_blocked
    quarantined = replace(descriptor, quarantine="definition_changed")
    facts = governance_facts(quarantined, governed.policy.current())
    assert facts.always_blocked and "quarantined=definition_changed" in facts.prefix()


def _decision() -> Decision:
    return Decision("block", ("r1",), "blocked_by_rule", "p", "g", "blocked by rule r1")


def _texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def test_only_executed_and_held_results_are_not_errors() -> None:
    executed = tool_result(ToolResult("c1", "t.x", "executed", output="out"), "mcp-1")
    assert not executed.is_error and _texts(executed) == ["out"]
    held = tool_result(
        ToolResult("c2", "t.x", "held", reason="approval_required", approval_id="apr-3"), "mcp-1"
    )
    assert not held.is_error
    assert held.structured_content["status"] == "waiting_approval"
    assert held.structured_content["executed"] is False
    assert "proctor approvals approve apr-3 --reviewer NAME" in _texts(held)[0]
    blocked = tool_result(
        ToolResult("c3", "t.x", "blocked", reason="blocked_by_rule", decision=_decision()), "mcp-1"
    )
    assert blocked.is_error and _texts(blocked)[0].startswith("blocked: blocked_by_rule")
    assert blocked.meta is not None and blocked.meta["proctor"]["rule_ids"] == ["r1"]
    failed = tool_result(
        ToolResult("c4", "t.x", "failed", reason="timeout", error="took too long"), "mcp-1"
    )
    assert failed.is_error and _texts(failed) == ["failed: timeout - took too long"]


def test_a_held_result_without_an_approval_store_says_it_cannot_be_approved_here() -> None:
    held = tool_result(ToolResult("c1", "t.x", "held", reason="approval_required"), "mcp-1")
    assert not held.is_error
    assert "cannot be approved here" in _texts(held)[0]
    assert "approve_with" not in held.structured_content


def test_a_truncated_output_says_so() -> None:
    result = tool_result(ToolResult("c1", "t.x", "executed", output="x", truncated=True), "r")
    assert _texts(result) == ["x", "[proctor: the output was truncated]"]


def test_dns_rebinding_allows_only_the_bound_host_and_localhost_variants() -> None:
    settings = http_security("127.0.0.1", 8123, ["proctor.internal", "10.0.0.5:9000", "::2"])
    assert settings.enable_dns_rebinding_protection
    assert settings.allowed_hosts == [
        "127.0.0.1:8123",
        "localhost:8123",
        "[::1]:8123",
        "proctor.internal:8123",
        "10.0.0.5:9000",
        "[::2]:8123",
    ]
    assert "http://localhost:8123" in settings.allowed_origins
    assert not any("*" in h for h in settings.allowed_hosts + settings.allowed_origins)


def test_an_ipv6_bind_is_bracketed() -> None:
    assert http_security("::1", 80).allowed_hosts[0] == "[::1]:80"
