"""Who resumes a held call: detached by default, awaited only when a caller waits for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from governance import ManualClock, Principal, ToolCall
from governance._gateway import Gateway
from governance.core._process_token import current_process_token
from governance.stores import ApprovalConflict

POLICY = """
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - id: hold-mail
    effect: require_approval
    match: {tool: email.send}
"""
MAIL = ToolCall(
    "c1", "email.send", {"to": "a@b.co", "subject": "s", "body": "b"}, "run-1",
    Principal("ann", "mailer", "ops"),
)  # fmt: skip


def _gateway(tmp_path: Path, **options: object) -> Gateway:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    return Gateway(
        state_dir=tmp_path / "state",
        policy_path=policy,
        clock=ManualClock(),
        **options,  # type: ignore[arg-type]
    )


def test_a_held_call_is_detached_by_default(tmp_path: Path) -> None:
    with _gateway(tmp_path) as gateway:
        held = gateway.firewall.call(MAIL)
        assert held.approval_id is not None
        assert gateway.approvals.get(held.approval_id).waiter is None


def test_an_awaited_held_call_names_this_process_as_its_waiter(tmp_path: Path) -> None:
    with _gateway(tmp_path, held_calls="awaited") as gateway:
        held = gateway.firewall.call(MAIL)
        assert held.approval_id is not None
        assert gateway.approvals.get(held.approval_id).waiter == current_process_token()
    with _gateway(tmp_path) as again:  # its waiter (this process) is alive: left pending
        assert again.reconciled == []
        assert again.approvals.get(held.approval_id).status == "pending"


@pytest.mark.parametrize("bad", ["attached", "", None, True])
def test_an_unknown_held_calls_mode_refuses_to_start(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="held_calls must be 'detached' or 'awaited'"):
        _gateway(tmp_path, held_calls=bad)


def test_withdrawing_a_held_call_cancels_it_once_and_audits_it(tmp_path: Path) -> None:
    with _gateway(tmp_path) as gateway:
        held = gateway.firewall.call(MAIL)
        assert held.approval_id is not None
        gateway.firewall.withdraw(held.approval_id, by="proctor", reason="gave up")
        assert gateway.approvals.get(held.approval_id).status == "cancelled"
        with pytest.raises(ApprovalConflict):
            gateway.firewall.withdraw(held.approval_id, by="proctor", reason="again")
        with pytest.raises(ApprovalConflict):
            gateway.firewall.approve(held.approval_id, "bob")
        cancelled = [e for e in gateway.audit.events("run-1") if e.kind == "approval.cancelled"]
        assert [e.data["reason"] for e in cancelled] == ["gave up"]
        resumed = gateway.firewall.resume_held(held.approval_id, MAIL)
        assert (resumed.outcome, resumed.reason) == ("blocked", "approval_cancelled")
