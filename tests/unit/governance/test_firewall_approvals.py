"""Held calls end to end: persisted, reviewed, re-verified and executed once - or never."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from governance import ManualClock, Principal, ToolCall
from governance._approval_flow import EditRefused
from governance._gateway import Gateway
from governance.stores._approvals import ApprovalConflict, SelfApprovalError
from governance.tools import outbox_rows

POLICY = """
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - id: hold-email
    description: every email needs a human
    effect: require_approval
    match: {tool: email.send}
  - id: hold-outside-recipients
    description: mail leaving example.com is looked at twice
    effect: require_approval
    match: {tool: email.send}
    when:
      - {arg: to, regex: '.*@example\\.com', negate: true}
  - id: no-mail-to-competitors
    effect: block
    match: {tool: email.send}
    when:
      - {arg: to, regex: '.*@rival\\.com'}
"""

ANN = Principal("ann", "mail-bot", "support")


@pytest.fixture
def policy_path(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    return path


@pytest.fixture
def gateway(tmp_path: Path, policy_path: Path, clock: ManualClock) -> Iterator[Gateway]:
    with Gateway(state_dir=tmp_path / "state", policy_path=policy_path, clock=clock) as gw:
        yield gw


def _email(to: str = "cfo@example.com", subject: str = "Q3") -> ToolCall:
    return ToolCall("c1", "email.send", {"to": to, "subject": subject, "body": "hi"}, "run-1", ANN)


def _held(gateway: Gateway, call: ToolCall) -> str:
    result = gateway.firewall.call(call)
    assert result.outcome == "held" and result.approval_id is not None
    return result.approval_id


def test_a_held_call_is_persisted_bound_to_tool_arguments_run_principal_and_policy(
    gateway: Gateway,
) -> None:
    call = _email()
    approval_id = _held(gateway, call)
    request = gateway.approvals.get(approval_id)
    assert (request.tool, request.run_id, request.call_id, request.actor) == (
        "email.send",
        "run-1",
        "c1",
        "ann",
    )
    assert request.arguments_digest == gateway.audit.digest_arguments(call.arguments)
    assert request.policy_digest == gateway.policy.current().digest
    assert request.status == "pending" and request.rule_ids == ("hold-email",)
    assert (request.expires_at - request.created_at).total_seconds() == 300
    assert outbox_rows(gateway.workspace) == []
    kinds = [e.kind for e in gateway.audit.events("run-1")]
    assert kinds == ["tool.requested", "policy.decided", "approval.required"]


def test_an_approved_call_executes_once_through_the_firewall(gateway: Gateway) -> None:
    call = _email()
    approval_id = _held(gateway, call)
    gateway.firewall.approve(approval_id, "bob")
    first = gateway.firewall.resume_held(approval_id, call)
    assert first.outcome == "executed" and first.approval_id == approval_id
    again = gateway.firewall.resume_held(approval_id, call)
    assert again.outcome == "blocked" and again.reason == "approval_already_used"
    assert len(outbox_rows(gateway.workspace)) == 1
    kinds = [e.kind for e in gateway.audit.events("run-1")]
    assert (
        kinds[-4:-2] == ["approval.consumed", "execution.started"] or "approval.consumed" in kinds
    )
    assert gateway.audit.verify("run-1").ok


def test_the_proposer_cannot_approve_their_own_call(gateway: Gateway) -> None:
    approval_id = _held(gateway, _email())
    with pytest.raises(SelfApprovalError):
        gateway.firewall.approve(approval_id, "ann")
    assert gateway.approvals.get(approval_id).status == "pending"


def test_a_rejected_call_is_a_refusal_and_never_executes(gateway: Gateway) -> None:
    call = _email()
    approval_id = _held(gateway, call)
    gateway.firewall.reject(approval_id, "bob", comment="not today")
    result = gateway.firewall.resume_held(approval_id, call)
    assert (result.outcome, result.reason) == ("blocked", "approval_rejected")
    assert "not today" in (result.error or "")
    assert outbox_rows(gateway.workspace) == []


def test_an_expired_request_can_neither_be_approved_nor_executed(
    gateway: Gateway, clock: ManualClock
) -> None:
    call = _email()
    approval_id = _held(gateway, call)
    clock.advance(301)
    with pytest.raises(ApprovalConflict):
        gateway.firewall.approve(approval_id, "bob")
    result = gateway.firewall.resume_held(approval_id, call)
    assert (result.outcome, result.reason) == ("blocked", "approval_expired")
    assert outbox_rows(gateway.workspace) == []


def test_an_approval_that_expires_before_execution_executes_nothing(
    gateway: Gateway, clock: ManualClock
) -> None:
    call = _email()
    approval_id = _held(gateway, call)
    gateway.firewall.approve(approval_id, "bob")
    clock.advance(301)
    result = gateway.firewall.resume_held(approval_id, call)
    assert (result.outcome, result.reason) == ("blocked", "approval_expired")
    assert outbox_rows(gateway.workspace) == []


def test_a_policy_that_blocks_after_approval_wins_and_nothing_executes(
    gateway: Gateway, policy_path: Path
) -> None:
    call = _email()
    approval_id = _held(gateway, call)
    gateway.firewall.approve(approval_id, "bob")
    policy_path.write_text(POLICY.replace("'.*@rival\\.com'", "'.*'"))
    result = gateway.firewall.resume_held(approval_id, call)
    assert (result.outcome, result.reason) == ("blocked", "blocked_by_rule")
    assert outbox_rows(gateway.workspace) == []
    assert "approval.revoked" in [e.kind for e in gateway.audit.events("run-1")]


def test_an_edit_that_lowers_nothing_new_executes_with_the_edited_arguments(
    gateway: Gateway,
) -> None:
    call = _email(subject="Q3 numbers (draft)")
    approval_id = _held(gateway, call)
    gateway.firewall.approve(approval_id, "bob", arguments={**call.arguments, "subject": "Q3"})
    result = gateway.firewall.resume_held(approval_id, call)
    assert result.outcome == "executed"
    assert [row["subject"] for row in outbox_rows(gateway.workspace)] == ["Q3"]


def test_an_edit_that_policy_blocks_is_refused_recorded_and_leaves_the_request_pending(
    gateway: Gateway,
) -> None:
    call = _email()
    approval_id = _held(gateway, call)
    with pytest.raises(EditRefused) as err:
        gateway.firewall.approve(
            approval_id, "bob", arguments={**call.arguments, "to": "x@rival.com"}
        )
    assert err.value.reason == "edit_blocked_by_policy"
    assert gateway.approvals.get(approval_id).status == "pending"
    assert "approval.edit_refused" in [e.kind for e in gateway.audit.events("run-1")]
    assert outbox_rows(gateway.workspace) == []


def test_an_edit_that_raises_the_risk_above_what_was_shown_is_refused(gateway: Gateway) -> None:
    call = _email()
    approval_id = _held(gateway, call)
    with pytest.raises(EditRefused) as err:
        gateway.firewall.approve(
            approval_id, "bob", arguments={**call.arguments, "to": "x@gmail.com"}
        )
    assert err.value.reason == "edit_raises_risk" and "hold-outside-recipients" in str(err.value)
    assert gateway.approvals.get(approval_id).status == "pending"


def test_an_edit_that_fails_the_schema_is_refused(gateway: Gateway) -> None:
    call = _email()
    approval_id = _held(gateway, call)
    with pytest.raises(EditRefused) as err:
        gateway.firewall.approve(approval_id, "bob", arguments={**call.arguments, "cc": "x"})
    assert err.value.reason == "invalid_arguments"


def test_arguments_tampered_in_the_store_are_caught_before_execution(gateway: Gateway) -> None:
    call = _email()
    approval_id = _held(gateway, call)
    gateway.firewall.approve(approval_id, "bob")
    with sqlite3.connect(gateway.state_dir / "approvals.sqlite") as conn:
        conn.execute(
            "UPDATE approvals SET sealed_arguments = ? WHERE id = ?",
            ('plain:{"to": "x@rival.com", "subject": "s", "body": "b"}', approval_id),
        )
    conn.close()
    result = gateway.firewall.resume_held(approval_id, call)
    assert (result.outcome, result.reason) == ("blocked", "approval_arguments_tampered")
    assert outbox_rows(gateway.workspace) == []


def test_an_approval_cannot_be_replayed_for_a_different_call(gateway: Gateway) -> None:
    call = _email()
    approval_id = _held(gateway, call)
    gateway.firewall.approve(approval_id, "bob")
    other = _email(to="someone@example.com")
    result = gateway.firewall.resume_held(approval_id, other)
    assert (result.outcome, result.reason) == ("blocked", "approval_mismatch")
    assert outbox_rows(gateway.workspace) == []


def test_a_pending_request_resumes_as_still_held(gateway: Gateway) -> None:
    call = _email()
    approval_id = _held(gateway, call)
    result = gateway.firewall.resume_held(approval_id, call)
    assert (result.outcome, result.reason) == ("held", "approval_pending")
    assert outbox_rows(gateway.workspace) == []


def test_an_unknown_tool_under_require_approval_is_parked_and_never_executes(
    tmp_path: Path, clock: ManualClock
) -> None:
    policy = tmp_path / "hold-unknown.yaml"
    policy.write_text(POLICY.replace("unknown_tool: block", "unknown_tool: require_approval"))
    with Gateway(state_dir=tmp_path / "s2", policy_path=policy, clock=clock) as gw:
        ghost = ToolCall("c1", "shell.exec", {"cmd": "rm -rf /"}, "run-1", ANN)
        held = gw.firewall.call(ghost)
        assert (held.outcome, held.reason) == ("held", "unknown_tool")
        assert held.approval_id is not None
        assert gw.approvals.get(held.approval_id).risk == "critical"
        gw.firewall.approve(held.approval_id, "bob")
        result = gw.firewall.resume_held(held.approval_id, ghost)
        assert (result.outcome, result.reason) == ("blocked", "unknown_tool")
        assert "execution.started" not in [e.kind for e in gw.audit.events("run-1")]


def test_a_held_call_with_an_omitted_default_executes_once_approved(
    tmp_path: Path, clock: ManualClock
) -> None:
    policy = tmp_path / "hold-tickets.yaml"
    policy.write_text(
        "version: 1\nrules:\n  - {id: hold-tickets, effect: require_approval, "
        "match: {tool: tickets.create}}\n"
    )
    with Gateway(state_dir=tmp_path / "s3", policy_path=policy, clock=clock) as gw:
        call = ToolCall("c1", "tickets.create", {"title": "t", "body": "b"}, "run-1", ANN)
        held = gw.firewall.call(call)
        assert held.approval_id is not None
        gw.firewall.approve(held.approval_id, "bob")
        result = gw.firewall.resume_held(held.approval_id, call)  # `priority` still omitted
        assert result.outcome == "executed", result
