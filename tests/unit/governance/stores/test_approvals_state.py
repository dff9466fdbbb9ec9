"""An approved request that was used says so: `state` moves on from `approved` to
`executing` and `executed` (or `consumed` when a crash left it in doubt), on every backend."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from governance.core._clock import ManualClock
from governance.core._contracts import Principal
from governance.stores._approvals import ApprovalRequest, ApprovalStore
from governance.stores._approvals_memory import MemoryApprovalStore

T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
ALICE = Principal(actor="alice", agent="ops-agent", team="platform")


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    clock = ManualClock(T0)
    if request.param == "memory":
        yield MemoryApprovalStore(clock=clock)
        return
    sqlite = ApprovalStore(tmp_path / "approvals.db", clock=clock)
    yield sqlite
    sqlite.close()


def _hold(store: ApprovalStore) -> ApprovalRequest:
    return store.create(
        run_id="mcp-6",
        call_id="c1",
        tool="email.send",
        arguments={"to": "ops@example.com"},
        arguments_digest="sha256:" + "a" * 64,
        principal=ALICE,
        policy_digest="sha256:" + "p" * 64,
        rule_ids=("approve-email",),
        reason="rule:approve-email",
        risk="medium",
    )


def test_an_approved_call_reads_approved_until_it_is_used(store: ApprovalStore) -> None:
    held = _hold(store)
    assert held.state == "pending"
    assert store.approve(held.id, "rita").state == "approved"


def test_a_used_approval_reads_executing_then_executed(store: ApprovalStore) -> None:
    held = _hold(store)
    store.approve(held.id, "rita")
    assert store.consume(held.id, awaiting="execution")
    executing = store.get(held.id)
    assert (executing.status, executing.state) == ("approved", "executing")
    store.recorded(held.id, "execution")
    done = store.get(held.id)
    assert (done.status, done.state) == ("approved", "executed")
    assert [r.state for r in store.list()] == ["executed"]


def test_a_used_approval_left_in_doubt_reads_consumed_not_executed(store: ApprovalStore) -> None:
    held = _hold(store)
    store.approve(held.id, "rita")
    assert store.consume(held.id, awaiting="execution")
    doubted = store.mark_in_doubt(held.id, "consumed and started, but no outcome was recorded")
    assert doubted.state == "consumed"


def test_a_rejected_call_keeps_its_status_as_its_state(store: ApprovalStore) -> None:
    held = _hold(store)
    assert store.reject(held.id, "rita", comment="no").state == "rejected"
