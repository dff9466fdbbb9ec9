"""Exact-limit contention: processes x threads, each with its own store on one SQLite file.

Exactly `limit` reservations may succeed, no more, no fewer (the harness:
tests/integration/_budget_contention.py; the PostgreSQL run: test_budgets_contention_postgres).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from governance.stores._budgets import Budget, BudgetStore
from tests.integration._budget_contention import any_call, contend

PROCESSES = 4
THREADS = 4
ATTEMPTS = 480
LIMIT = 25


@pytest.mark.slow
def test_exactly_the_limit_is_reserved_when_processes_and_threads_race(tmp_path: Path) -> None:
    db = tmp_path / "budgets.db"
    budget = Budget("destructive-per-run", "", "agent_run", LIMIT, 3600)
    got = contend(str(db), [budget], ["run-1"], processes=PROCESSES, threads=THREADS,
                  attempts=ATTEMPTS)  # fmt: skip

    assert got.errors == []
    print(
        f"\nbudget contention: {PROCESSES} processes x {THREADS} threads, {ATTEMPTS} attempts, "
        f"limit {LIMIT}: {len(got.reserved)} reserved, {got.denied} denied in {got.wall:.2f} s"
    )
    assert len(got.reserved) == LIMIT
    assert got.denied == ATTEMPTS - LIMIT
    assert got.reasons == {"budget_exhausted:agent_run"}
    with BudgetStore(db) as store:
        rows = store.ledger()
        assert len(rows) == LIMIT
        assert {row.status for row in rows} == {"reserved"}
        assert sorted(row.call_id for row in rows) == sorted(call for call, _ in got.reserved)
        assert sorted(row.id for row in rows) == sorted(i for _, ids in got.reserved for i in ids)
        assert store.usage(any_call("run-1"), [budget]) == {budget.id: LIMIT}


@pytest.mark.slow
def test_two_budgets_are_checked_and_charged_together_under_contention(tmp_path: Path) -> None:
    # Two runs share one actor: the actor budget runs out first, and every success must be
    # charged to both budgets in the same transaction.
    db = tmp_path / "budgets.db"
    per_run = Budget("per-run", "", "agent_run", 1000, 3600)
    per_actor = Budget("per-actor", "", "actor", LIMIT, 3600)
    got = contend(str(db), [per_run, per_actor], ["run-1", "run-2"], processes=PROCESSES,
                  threads=THREADS, attempts=ATTEMPTS)  # fmt: skip

    assert got.errors == []
    print(f"\ntwo-budget contention: {len(got.reserved)} reserved in {got.wall:.2f} s")
    assert len(got.reserved) == LIMIT
    assert got.reasons == {"budget_exhausted:actor"}
    assert all(len(ids) == 2 for _, ids in got.reserved)
    with BudgetStore(db) as store:
        assert len(store.ledger("per-actor", "ann")) == LIMIT
        assert len(store.ledger("per-run")) == LIMIT
        by_run = store.usage(any_call("run-1"), [per_run])["per-run"]
        assert by_run + store.usage(any_call("run-2"), [per_run])["per-run"] == LIMIT
