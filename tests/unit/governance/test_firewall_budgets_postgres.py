"""The firewall on a PostgreSQL budget ledger: a server that is down blocks every budgeted
destructive call before it runs (fail closed: nothing executed, nothing counted), and calls are
counted again, exactly, once it is back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import BaseModel, ConfigDict

from governance import Firewall, ManualClock, Principal, StaticPolicy, ToolCall, parse_policy
from governance.stores import MemoryApprovalStore, MemoryAuditLog
from governance.stores._budgets_postgres import PostgresBudgetLedger
from governance.stores._postgres import PostgresTarget
from governance.tools import LocalToolSource, ToolRegistry, local_tool
from tests.postgres_cluster import PostgresCluster

POLICY = """
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - {id: wipes, effect: allow, match: {tool: ops.wipe}}
budgets:
  - {id: two-per-run, scope: agent_run, limit: 2, window_seconds: 3600}
"""
ANN = Principal("ann", "cleaner", "ops")


class WipeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    target: str


@pytest.fixture
def wiped() -> list[str]:
    return []


@pytest.fixture
def ledger(
    postgres_cluster: PostgresCluster, migrated_template: str, clock: ManualClock
) -> Iterator[PostgresBudgetLedger]:
    url = postgres_cluster.create_database(template=migrated_template)
    with PostgresBudgetLedger(PostgresTarget(url), clock=clock) as opened:
        yield opened


@pytest.fixture
def firewall(ledger: PostgresBudgetLedger, wiped: list[str], clock: ManualClock) -> Firewall:
    def wipe(args: WipeArgs) -> str:
        wiped.append(args.target)
        return "wiped"

    tool = local_tool(
        "ops.wipe", description="wipes", args=WipeArgs, action_type="destructive",
        risk="high", reversible=False,
    )(wipe)  # fmt: skip
    return Firewall(
        ToolRegistry([LocalToolSource([tool], name="ops")]),
        StaticPolicy(parse_policy(POLICY)),
        MemoryAuditLog(clock=clock),
        approvals=MemoryApprovalStore(clock=clock),
        budgets=ledger,
    )


def _wipe(firewall: Firewall, n: int) -> str:
    result = firewall.call(ToolCall(f"c{n}", "ops.wipe", {"target": f"t{n}"}, "run-1", ANN))
    return result.outcome if result.outcome == "executed" else f"{result.outcome}:{result.reason}"


def test_a_server_that_is_down_blocks_destructive_calls_and_counting_resumes_when_it_returns(
    postgres_cluster: PostgresCluster,
    firewall: Firewall,
    ledger: PostgresBudgetLedger,
    wiped: list[str],
) -> None:
    assert _wipe(firewall, 1) == "executed"
    postgres_cluster.stop()
    try:
        assert _wipe(firewall, 2) == "blocked:budget_store_unavailable"
        assert _wipe(firewall, 3) == "blocked:budget_store_unavailable"
    finally:
        postgres_cluster.start()
    assert wiped == ["t1"], "nothing ran while the ledger could not count it"
    assert _wipe(firewall, 4) == "executed"
    assert _wipe(firewall, 5) == "blocked:budget_exhausted:agent_run"  # two, across the outage
    assert wiped == ["t1", "t4"]
    assert [(row.call_id, row.status) for row in ledger.ledger()] == [
        ("c1", "executed"),
        ("c4", "executed"),
    ]
