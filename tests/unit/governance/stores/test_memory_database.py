"""Memory stores start from a copy of a pristine database built once per process, or from one
an earlier store closed, emptied: each is private, complete, and keeps its connection settings;
one whose schema changed is never reused."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Callable

import pytest

from governance.core._clock import ManualClock
from governance.core._contracts import Principal, ToolCall
from governance.stores import _sqlite
from governance.stores._approvals import ApprovalStore
from governance.stores._budgets import Budget, BudgetReservation, BudgetStore
from governance.stores._sqlite import memory_database

ALICE = Principal(actor="alice", agent="ops-agent", team="platform")
T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def _create_counter(calls: list[int]) -> Callable[[sqlite3.Connection], None]:
    def create(conn: sqlite3.Connection) -> None:
        calls.append(1)
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT)")

    return create


def test_the_schema_is_built_once_per_name_and_copied_after(request: pytest.FixtureRequest) -> None:
    calls: list[int] = []
    name = f"test-{request.node.name}"
    create = _create_counter(calls)
    first = memory_database(name, create)
    second = memory_database(name, create)
    try:
        assert calls == [1]
        for conn in (first, second):
            assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)
    finally:
        first.close()
        second.close()


def test_a_copy_shares_no_rows_or_sequence_with_later_copies(
    request: pytest.FixtureRequest,
) -> None:
    name = f"test-{request.node.name}"
    create = _create_counter([])
    first = memory_database(name, create)
    first.execute("INSERT INTO t (v) VALUES ('one'), ('two')")
    second = memory_database(name, create)
    try:
        assert second.execute("SELECT count(*) FROM t").fetchone() == (0,)
        second.execute("INSERT INTO t (v) VALUES ('fresh')")
        assert second.execute("SELECT id FROM t").fetchall() == [(1,)], "AUTOINCREMENT restarts"
        assert first.execute("SELECT count(*) FROM t").fetchone() == (2,)
    finally:
        first.close()
        second.close()


def test_a_failing_schema_leaves_no_template_behind(request: pytest.FixtureRequest) -> None:
    name = f"test-{request.node.name}"

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE broken (")

    with pytest.raises(sqlite3.Error):
        memory_database(name, broken)
    calls: list[int] = []
    conn = memory_database(name, _create_counter(calls))
    conn.close()
    assert calls == [1], "the next attempt builds the template again"


def test_ephemeral_approval_stores_number_from_one_and_zero_freed_pages() -> None:
    first = ApprovalStore.ephemeral()
    second = None
    try:
        for n in range(3):
            first.create(
                run_id="r", call_id=f"c{n}", tool="fs.delete", arguments={"path": "a"},
                arguments_digest="sha256:" + "a" * 64, principal=ALICE,
                policy_digest="sha256:" + "p" * 64, rule_ids=("x",), reason="rule:x",
                risk="high",
            )  # fmt: skip
        second = ApprovalStore.ephemeral()
        assert second.list() == []
        made = second.create(
            run_id="r", call_id="c1", tool="fs.delete", arguments={"path": "a"},
            arguments_digest="sha256:" + "a" * 64, principal=ALICE,
            policy_digest="sha256:" + "p" * 64, rule_ids=("x",), reason="rule:x", risk="high",
        )  # fmt: skip
        assert made.id == "apr-1"
        with second._session("test") as conn:
            assert conn.execute("PRAGMA secure_delete").fetchone() == (1,)
    finally:
        first.close()
        if second is not None:
            second.close()


def test_ephemeral_budget_stores_start_empty_after_others_were_used() -> None:
    budgets = BudgetStore.ephemeral()
    assert budgets.ledger() == [] and budgets.resets() == []
    budgets.close()


def test_a_closed_database_is_reused_emptied_with_its_counters_reset(
    request: pytest.FixtureRequest,
) -> None:
    name = f"test-{request.node.name}"
    create = _create_counter([])
    first = memory_database(name, create)
    first.execute("INSERT INTO t (v) VALUES ('one'), ('two')")
    first.execute("BEGIN")
    first.execute("INSERT INTO t (v) VALUES ('uncommitted')")
    first.close()
    again = memory_database(name, create)
    try:
        assert again is first, "kept warm for the next store of the schema"
        assert not again.in_transaction
        assert again.execute("SELECT count(*) FROM t").fetchone() == (0,)
        again.execute("INSERT INTO t (v) VALUES ('fresh')")
        assert again.execute("SELECT id FROM t").fetchall() == [(1,)]
    finally:
        again.close()


@pytest.mark.parametrize(
    "change",
    [
        "CREATE TABLE extra (x)",
        "CREATE TEMP TABLE scratch (x)",
        "CREATE INDEX t_v ON t (v)",
    ],
)
def test_a_database_whose_schema_changed_is_closed_not_reused(
    request: pytest.FixtureRequest, change: str
) -> None:
    name = f"test-{request.node.name}"
    create = _create_counter([])
    first = memory_database(name, create)
    first.execute(change)
    first.close()
    with pytest.raises(sqlite3.ProgrammingError):
        first.execute("SELECT 1")
    second = memory_database(name, create)
    try:
        assert second is not first
        names = second.execute("SELECT name FROM sqlite_master").fetchall()
        assert sorted(row[0] for row in names) == ["sqlite_sequence", "t"]
        assert second.execute("SELECT count(*) FROM temp.sqlite_master").fetchone() == (0,)
    finally:
        second.close()


def test_at_most_a_few_idle_databases_are_kept(request: pytest.FixtureRequest) -> None:
    name = f"test-{request.node.name}"
    create = _create_counter([])
    opened = [memory_database(name, create) for _ in range(10)]
    for conn in opened:
        conn.close()
    closed = 0
    for conn in opened:
        try:
            conn.execute("SELECT 1")
        except sqlite3.ProgrammingError:
            closed += 1
    assert closed == 10 - _sqlite._POOL_SIZE


def test_stores_opened_one_after_another_see_nothing_of_each_other() -> None:
    for _ in range(3):
        approvals = ApprovalStore.ephemeral()
        assert approvals.list() == []
        made = approvals.create(
            run_id="r", call_id="c1", tool="fs.delete", arguments={"path": "a"},
            arguments_digest="sha256:" + "a" * 64, principal=ALICE,
            policy_digest="sha256:" + "p" * 64, rule_ids=("x",), reason="rule:x", risk="high",
        )  # fmt: skip
        assert made.id == "apr-1"
        with approvals._session("test") as conn:
            assert conn.execute("PRAGMA secure_delete").fetchone() == (1,)
        approvals.close()
        # The ledger refuses deletes (its rows are evidence): the template is copied over it.
        budgets = BudgetStore.ephemeral(clock=ManualClock(T0))
        assert budgets.ledger() == [] and budgets.resets() == []
        call = ToolCall("c1", "fs.delete", {"path": "x"}, "run-1", ALICE)
        budget = Budget("b", "", "agent_run", 5, 3600, ("destructive",), ())
        assert isinstance(budgets.reserve(call, "destructive", [budget]), BudgetReservation)
        budgets.reset(budget_id="b", key="run-1", by="ops", approved_by="lead", reason="test")
        assert [row.id for row in budgets.ledger()] == [1]
        budgets.close()
