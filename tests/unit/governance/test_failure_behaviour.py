"""The failure table in README.md, cell by cell: what a call does when a store is down.

Read, write and destructive calls, against an unavailable budget store, audit log and approval
store. Destructive never fails open.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from governance import ManualClock, Principal, ToolCall
from governance._gateway import Gateway
from governance.tools import file_tree, outbox_rows, tickets

POLICY = """
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - {id: read, effect: allow, match: {tool: orders.lookup}}
  - {id: write, effect: allow, match: {tool: tickets.create}}
  - id: destroy
    effect: allow
    match: {tool: fs.delete}
    when: [{arg: path, path_prefix: notes/}]
  - {id: hold-write, effect: require_approval, match: {tool: refunds.create_draft}}
  - {id: hold-destructive, effect: require_approval, match: {tool: email.send}}
budgets:
  - {id: destructive, scope: agent_run, limit: 10, window_seconds: 3600}
"""

ANN = Principal("ann", "bot", "ops")
CALLS = {
    "read": ToolCall("c1", "orders.lookup", {"order_id": "ORD-0001"}, "run-1", ANN),
    "write": ToolCall("c1", "tickets.create", {"title": "t", "body": "b"}, "run-1", ANN),
    "destructive": ToolCall("c1", "fs.delete", {"path": "notes/todo.txt"}, "run-1", ANN),
    "held write": ToolCall(
        "c1",
        "refunds.create_draft",
        {"order_id": "ORD-0001", "amount": 5.0, "reason": "late"},
        "run-1",
        ANN,
    ),
    "held destructive": ToolCall(
        "c1", "email.send", {"to": "a@b.co", "subject": "s", "body": "b"}, "run-1", ANN
    ),
}


@pytest.fixture(params=["fsync", "os"])
def gateway(
    tmp_path: Path, clock: ManualClock, request: pytest.FixtureRequest
) -> Iterator[Gateway]:
    """Write-ahead holds in every durability mode of the file stores."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    gw = Gateway(
        state_dir=tmp_path / "state", policy_path=policy, clock=clock, durability=request.param
    )
    yield gw
    gw.close()


def _effects(gateway: Gateway) -> tuple[int, bool, int]:
    return (
        len(tickets(gateway.workspace)),
        "notes/todo.txt" in file_tree(gateway.workspace),
        len(outbox_rows(gateway.workspace)),
    )


@pytest.mark.parametrize(
    ("kind", "outcome", "reason"),
    [
        ("read", "executed", None),
        ("write", "executed", None),
        ("destructive", "blocked", "budget_store_unavailable"),
        ("held write", "held", "approval_required"),
        ("held destructive", "blocked", "budget_store_unavailable"),
    ],
)
def test_budget_store_unavailable(
    gateway: Gateway, kind: str, outcome: str, reason: str | None
) -> None:
    gateway.budgets.close()
    result = gateway.firewall.call(CALLS[kind])
    assert (result.outcome, result.reason) == (outcome, reason)
    if kind == "destructive":
        assert "notes/todo.txt" in file_tree(gateway.workspace)


@pytest.mark.parametrize("kind", ["read", "write", "destructive", "held destructive"])
def test_audit_write_fails_nothing_executes(gateway: Gateway, kind: str) -> None:
    before = _effects(gateway)
    gateway.audit.close()
    result = gateway.firewall.call(CALLS[kind])
    assert (result.outcome, result.reason) == ("failed", "audit_unavailable")
    assert _effects(gateway) == before
    assert gateway.approvals.list() == []


@pytest.mark.parametrize(
    ("kind", "outcome", "reason"),
    [
        ("read", "executed", None),
        ("write", "executed", None),
        ("destructive", "executed", None),
        ("held write", "blocked", "approval_store_unavailable"),
        ("held destructive", "blocked", "approval_store_unavailable"),
    ],
)
def test_approval_store_unavailable(
    gateway: Gateway, kind: str, outcome: str, reason: str | None
) -> None:
    gateway.approvals.close()
    result = gateway.firewall.call(CALLS[kind])
    assert (result.outcome, result.reason) == (outcome, reason)
    if kind.startswith("held"):
        assert outbox_rows(gateway.workspace) == []
