"""Budgets through the firewall: reserve at decision, settle after dispatch, two-person reset."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from governance import ManualClock, Policy, Principal, ToolCall
from governance._gateway import Gateway
from governance.stores._budgets import BudgetResetRefused
from governance.tools import file_tree

POLICY = """
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - id: delete-notes
    effect: allow
    match: {tool: fs.delete}
    when: [{arg: path, path_prefix: notes/}]
  - id: writes
    effect: allow
    match: {tool: [fs.write, tickets.create]}
  - id: hold-mail
    effect: require_approval
    match: {tool: email.send}
budgets:
  - id: two-per-run
    scope: agent_run
    limit: 2
    window_seconds: 3600
  - id: three-per-actor
    scope: actor
    limit: 3
    window_seconds: 3600
"""

ANN = Principal("ann", "cleaner", "ops")


@pytest.fixture
def gateway(tmp_path: Path, clock: ManualClock) -> Iterator[Gateway]:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    with Gateway(state_dir=tmp_path / "state", policy_path=policy, clock=clock) as gw:
        for n in range(6):
            (gw.workspace / "files" / "notes" / f"n{n}.txt").write_text("x")
        yield gw


def _delete(n: int, run_id: str = "run-1", principal: Principal = ANN) -> ToolCall:
    return ToolCall(f"c{n}", "fs.delete", {"path": f"notes/n{n}.txt"}, run_id, principal)


def test_the_run_budget_stops_the_third_irreversible_action(gateway: Gateway) -> None:
    outcomes = [gateway.firewall.call(_delete(n)) for n in range(3)]
    assert [r.outcome for r in outcomes] == ["executed", "executed", "blocked"]
    assert outcomes[2].reason == "budget_exhausted:agent_run"
    assert outcomes[2].decision is not None and outcomes[2].decision.rule_ids == ("two-per-run",)
    assert "notes/n2.txt" in file_tree(gateway.workspace)


def test_the_most_restrictive_scope_is_named(gateway: Gateway) -> None:
    results = [gateway.firewall.call(_delete(n, run_id=f"run-{n}")) for n in range(4)]
    assert [r.outcome for r in results] == ["executed"] * 3 + ["blocked"]
    assert results[3].reason == "budget_exhausted:actor"


def test_writes_are_not_counted_by_destructive_budgets(gateway: Gateway) -> None:
    for n in range(5):
        call = ToolCall(
            f"w{n}", "fs.write", {"path": f"reports/{n}.md", "content": "x"}, "run-1", ANN
        )
        assert gateway.firewall.call(call).outcome == "executed"
    assert gateway.firewall.call(_delete(0)).outcome == "executed"


def test_a_failure_before_any_effect_releases_the_slot(gateway: Gateway) -> None:
    missing = ToolCall("m1", "fs.delete", {"path": "notes/nope.txt"}, "run-1", ANN)
    assert gateway.firewall.call(missing).reason == "not_found"
    assert [gateway.firewall.call(_delete(n)).outcome for n in range(2)] == ["executed"] * 2


def test_a_held_call_is_blocked_at_once_when_its_budget_is_used_up(gateway: Gateway) -> None:
    for n in range(2):
        gateway.firewall.call(_delete(n))
    mail = ToolCall("e1", "email.send", {"to": "a@b.co", "subject": "s", "body": "b"}, "run-1", ANN)
    result = gateway.firewall.call(mail)
    assert (result.outcome, result.reason) == ("blocked", "budget_exhausted:agent_run")
    assert gateway.approvals.list() == []


def test_an_approved_call_reserves_its_slot_when_it_executes(gateway: Gateway) -> None:
    mail = ToolCall("e1", "email.send", {"to": "a@b.co", "subject": "s", "body": "b"}, "run-1", ANN)
    held = gateway.firewall.call(mail)
    assert held.approval_id is not None
    gateway.firewall.call(_delete(0))
    gateway.firewall.call(_delete(1))  # the run budget is now used up
    gateway.firewall.approve(held.approval_id, "bob")
    result = gateway.firewall.resume_held(held.approval_id, mail)
    assert (result.outcome, result.reason) == ("blocked", "budget_exhausted:agent_run")
    assert gateway.approvals.get(held.approval_id).consumed is False


def test_a_two_person_reset_moves_the_watermark_and_keeps_the_evidence(gateway: Gateway) -> None:
    for n in range(3):
        gateway.firewall.call(_delete(n))
    with pytest.raises(BudgetResetRefused):
        gateway.budgets.reset(
            budget_id="two-per-run", key="run-1", by="dana", approved_by="dana", reason="loop"
        )
    with pytest.raises(BudgetResetRefused):
        gateway.budgets.reset(
            budget_id="two-per-run",
            key="run-1",
            by="ann",
            approved_by="erin",
            reason="loop",
            agent_principal=ANN,
        )
    before = gateway.budgets.ledger("two-per-run", "run-1")
    gateway.budgets.reset(
        budget_id="two-per-run", key="run-1", by="dana", approved_by="erin", reason="fixed the loop"
    )
    assert gateway.firewall.call(_delete(3)).outcome == "executed"
    after = gateway.budgets.ledger("two-per-run", "run-1")
    assert [row.id for row in after[: len(before)]] == [row.id for row in before]
    assert len(after) == len(before) + 1


def test_a_policy_edit_landing_mid_call_cannot_drop_the_budget(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = tmp_path / "edited.yaml"
    text = POLICY.replace("limit: 2", "limit: 1")
    policy.write_text(text)
    with Gateway(state_dir=tmp_path / "s", policy_path=policy, clock=clock) as gw:
        for n in range(3):
            (gw.workspace / "files" / "notes" / f"n{n}.txt").write_text("x")
        edits = iter(range(100))
        current = gw.policy.current

        def edit_after_each_read() -> Policy:
            # The decision's snapshot is taken; the file changes before the budget gate runs
            # (observers now see `policy.decided` only once it is written, after the gate).
            snapshot = current()
            policy.write_text(text.replace("effect: allow", f"effect: allow  # {next(edits)}"))
            return snapshot

        monkeypatch.setattr(gw.policy, "current", edit_after_each_read)
        outcomes = [gw.firewall.call(_delete(n)).outcome for n in range(3)]
        assert outcomes == ["executed", "blocked", "blocked"]
        assert len(gw.budgets.ledger("two-per-run", "run-1")) == 1


@pytest.mark.parametrize("variant", ["Ann", "ａnn", "ann\u200b", "\u0430nn", " ann"])
def test_a_look_alike_actor_name_is_charged_to_the_same_budget(
    gateway: Gateway, variant: str
) -> None:
    results = [gateway.firewall.call(_delete(n, run_id=f"run-{n}")) for n in range(3)]
    assert [r.outcome for r in results] == ["executed"] * 3
    disguised = Principal(variant, "cleaner", "ops")
    fourth = gateway.firewall.call(_delete(3, run_id="run-3", principal=disguised))
    assert (fourth.outcome, fourth.reason) == ("blocked", "budget_exhausted:actor")
    assert "notes/n3.txt" in file_tree(gateway.workspace)
