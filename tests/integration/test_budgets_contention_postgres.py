"""Budgets on a shared PostgreSQL server are exact under contention: several gateway processes
x threads (each thread its own connection) against one limit win exactly the limit, every
repetition; wins settled `unknown` keep counting; a two-person reset made by one process
releases the key for all of them, once.

The seed's figure is 500 attempts from 64 threads, limit 25: exactly 25. Here 4 processes x 16
threads make those 500 attempts, on a fresh database each repetition.
"""

from __future__ import annotations

import pytest

from governance.stores._budgets import Budget, BudgetDenial
from governance.stores._budgets_postgres import PostgresBudgetLedger
from governance.stores._postgres import PostgresTarget
from tests.integration._budget_contention import any_call, contend
from tests.postgres_cluster import PostgresCluster
from tests.store_backends import migrated_template

__all__ = ["migrated_template"]  # the session's migrated database, copied per repetition

PROCESSES = 4
THREADS = 16
ATTEMPTS = 500
LIMIT = 25
REPETITIONS = 5


def _fresh(cluster: PostgresCluster, template: str) -> str:
    return cluster.create_database(template=template)


@pytest.mark.slow
def test_exactly_the_limit_is_reserved_every_repetition_when_processes_and_threads_race(
    postgres_cluster: PostgresCluster, migrated_template: str
) -> None:
    budget = Budget("destructive-per-run", "", "agent_run", LIMIT, 3600)
    walls = []
    for _ in range(REPETITIONS):
        url = _fresh(postgres_cluster, migrated_template)
        got = contend(url, [budget], ["run-1"], processes=PROCESSES, threads=THREADS,
                      attempts=ATTEMPTS)  # fmt: skip
        assert got.errors == []
        assert len(got.reserved) == LIMIT
        assert got.denied == ATTEMPTS - LIMIT
        assert got.reasons == {"budget_exhausted:agent_run"}
        with PostgresBudgetLedger(PostgresTarget(url)) as store:
            rows = store.ledger()
            assert sorted(row.call_id for row in rows) == sorted(c for c, _ in got.reserved)
            won = sorted(i for _, ids in got.reserved for i in ids)
            assert sorted(row.id for row in rows) == won
            assert {row.status for row in rows} == {"reserved"}
            assert store.usage(any_call("run-1"), [budget]) == {budget.id: LIMIT}
        walls.append(got.wall)
    print(
        f"\npostgres budget contention: {PROCESSES} processes x {THREADS} threads, {ATTEMPTS} "
        f"attempts, limit {LIMIT}: exactly {LIMIT} winners in each of {REPETITIONS} repetitions; "
        f"wall per repetition {min(walls):.2f}-{max(walls):.2f} s"
    )


@pytest.mark.slow
def test_two_budgets_are_checked_and_charged_together_under_contention(
    postgres_cluster: PostgresCluster, migrated_template: str
) -> None:
    url = _fresh(postgres_cluster, migrated_template)
    per_run = Budget("per-run", "", "agent_run", 1000, 3600)
    per_actor = Budget("per-actor", "", "actor", LIMIT, 3600)
    got = contend(url, [per_run, per_actor], ["run-1", "run-2"], processes=PROCESSES,
                  threads=THREADS, attempts=ATTEMPTS)  # fmt: skip
    assert got.errors == []
    assert len(got.reserved) == LIMIT
    assert got.reasons == {"budget_exhausted:actor"}
    assert all(len(ids) == 2 for _, ids in got.reserved)
    with PostgresBudgetLedger(PostgresTarget(url)) as store:
        assert len(store.ledger("per-actor", "ann")) == LIMIT
        assert len(store.ledger("per-run")) == LIMIT


@pytest.mark.slow
def test_unknown_outcomes_keep_counting_and_a_reset_releases_the_key_once_for_every_process(
    postgres_cluster: PostgresCluster, migrated_template: str
) -> None:
    url = _fresh(postgres_cluster, migrated_template)
    budget = Budget("per-run", "", "agent_run", LIMIT, 3600)
    settled = ("unknown", "executed")
    first = contend(url, [budget], ["run-1"], processes=PROCESSES, threads=THREADS,
                    attempts=ATTEMPTS, outcomes=settled)  # fmt: skip
    assert first.errors == [] and len(first.reserved) == LIMIT
    with PostgresBudgetLedger(PostgresTarget(url)) as store:
        assert {row.status for row in store.ledger()} == {"unknown", "executed"}
        assert isinstance(store.reserve(any_call("run-1"), "destructive", [budget]), BudgetDenial)
        reset = store.reset(budget_id="per-run", key="run-1", by="carol", approved_by="dave",
                            reason="loop fixed")  # fmt: skip
        assert reset.after_row == max(row.id for row in store.ledger())

    second = contend(url, [budget], ["run-1"], processes=PROCESSES, threads=THREADS,
                     attempts=ATTEMPTS, outcomes=settled)  # fmt: skip
    assert second.errors == [] and len(second.reserved) == LIMIT
    with PostgresBudgetLedger(PostgresTarget(url)) as store:
        rows = store.ledger()
        assert len(rows) == 2 * LIMIT, "the reset kept every earlier row as evidence"
        assert all(i > reset.after_row for _, ids in second.reserved for i in ids)
        (status,) = store.status([budget])
        assert (status.used, status.remaining, status.watermark) == (LIMIT, 0, reset.at)
