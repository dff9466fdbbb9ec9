"""What a server changes about the budget ledger: the database itself keeps the evidence, a
connection lost mid-reserve fails closed and counts nothing, the store recovers when the server
returns, and it refuses a database at another schema version. Generic behaviour is in the
contract tests (test_budgets_store.py), which run here too."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from governance import ManualClock, Principal, ToolCall
from governance.stores._budgets import (
    Budget,
    BudgetDenial,
    BudgetReservation,
    BudgetStoreError,
)
from governance.stores._budgets_postgres import PostgresBudgetLedger, lock_id
from governance.stores._postgres import PostgresTarget
from governance.stores._postgres_schema import latest_version, migrate
from tests.postgres_cluster import PostgresCluster

START = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
BUDGET = Budget("b", "", "agent_run", 1, 3600)


def _call(call_id: str = "c1", run: str = "run-1") -> ToolCall:
    return ToolCall(call_id, "fs.delete", {}, run, Principal("ann", "bot", "ops"))


@pytest.fixture
def url(postgres_cluster: PostgresCluster, migrated_template: str) -> str:
    return postgres_cluster.create_database(template=migrated_template)


@pytest.fixture
def ledger(url: str) -> Iterator[PostgresBudgetLedger]:
    with PostgresBudgetLedger(PostgresTarget(url), clock=ManualClock(START)) as opened:
        yield opened


def _reserved(result: BudgetReservation | BudgetDenial) -> BudgetReservation:
    assert isinstance(result, BudgetReservation), result
    return result


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM budget_ledger",
        "TRUNCATE budget_ledger",
        "UPDATE budget_ledger SET status = 'released'",
        "UPDATE budget_ledger SET key = 'elsewhere'",
        "UPDATE budget_ledger SET created_us = 0",
        "INSERT INTO budget_ledger (id, budget_id, scope, key, call_id, run_id, tool, impact, "
        "actor, agent, team, status, created_us, created_at) VALUES (1000, 'b', 'agent_run', "
        "'run-1', 'x', 'run-1', 't', 'destructive', 'a', 'b', 'c', 'reserved', 0, '')",
        "DELETE FROM budget_resets",
        "TRUNCATE budget_resets",
        "UPDATE budget_resets SET after_row = 0",
    ],
)
def test_the_database_refuses_to_delete_or_rewrite_evidence_whoever_connects(
    ledger: PostgresBudgetLedger, url: str, sql: str
) -> None:
    reservation = _reserved(ledger.reserve(_call(), "destructive", [BUDGET]))
    ledger.settle(reservation, "executed")
    ledger.reset(budget_id="b", key="run-1", by="carol", approved_by="dave", reason="r")
    before = (ledger.ledger(), ledger.resets())
    with psycopg.connect(url, autocommit=True) as conn, pytest.raises(psycopg.Error):
        conn.execute(sql)
    assert (ledger.ledger(), ledger.resets()) == before
    assert [row.status for row in before[0]] == ["executed"]


def test_a_reserved_row_is_settled_once_by_the_database_too(
    ledger: PostgresBudgetLedger, url: str
) -> None:
    reservation = _reserved(ledger.reserve(_call(), "destructive", [BUDGET]))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE budget_ledger SET status = 'unknown'")  # its one change
        with pytest.raises(psycopg.Error, match="settled once"):
            conn.execute("UPDATE budget_ledger SET status = 'released'")
    with pytest.raises(BudgetStoreError, match="already settled as unknown"):
        ledger.settle(reservation, "released")
    assert isinstance(ledger.reserve(_call("c2"), "destructive", [BUDGET]), BudgetDenial)


def _waiting_on_a_lock(url: str, pid: int) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE pid = %s AND NOT granted", (pid,)
        ).fetchone()
    return bool(row and row[0])


def test_a_connection_lost_mid_reserve_fails_closed_and_counts_nothing_twice(
    ledger: PostgresBudgetLedger, url: str
) -> None:
    # Another writer holds the key, so the reserve is inside its transaction when its
    # connection is cut: it must raise, leave no row, and the next call reconnects.
    holder = psycopg.connect(url)
    try:
        holder.execute(
            "SELECT pg_advisory_xact_lock(%s::int4, %s::int4)",
            (0x42554447, lock_id(("b", "run-1"))),
        )
        pid = ledger._conn.info.backend_pid
        outcome: list[Any] = []
        worker = threading.Thread(
            target=lambda: outcome.append(_attempt(ledger, _call("c1"))), daemon=True
        )
        worker.start()
        deadline = time.monotonic() + 20
        while not _waiting_on_a_lock(url, pid):
            assert time.monotonic() < deadline, "the reserve never reached the lock"
            time.sleep(0.02)
        with psycopg.connect(url, autocommit=True) as killer:
            killer.execute("SELECT pg_terminate_backend(%s)", (pid,))
        worker.join(timeout=20)
        assert not worker.is_alive()
    finally:
        holder.rollback()
        holder.close()
    (error,) = outcome
    assert isinstance(error, BudgetStoreError), error
    assert "could not reserve budget for call 'c1'" in str(error)
    assert ledger.ledger() == []  # a new connection answers; nothing was written
    first = _reserved(ledger.reserve(_call("c2"), "destructive", [BUDGET]))
    assert isinstance(ledger.reserve(_call("c3"), "destructive", [BUDGET]), BudgetDenial)
    assert [row.id for row in ledger.ledger()] == list(first.ids)


def _attempt(ledger: PostgresBudgetLedger, call: ToolCall) -> object:
    try:
        return ledger.reserve(call, "destructive", [BUDGET])
    except BudgetStoreError as exc:
        return exc


def test_a_stopped_server_fails_every_call_closed_and_the_store_recovers_when_it_returns(
    postgres_cluster: PostgresCluster, ledger: PostgresBudgetLedger
) -> None:
    first = _reserved(ledger.reserve(_call("c1"), "destructive", [BUDGET]))
    postgres_cluster.stop()
    try:
        with pytest.raises(BudgetStoreError, match="could not reserve"):
            ledger.reserve(_call("c2"), "destructive", [Budget("other", "", "actor", 5, 60)])
        with pytest.raises(BudgetStoreError, match="could not settle"):
            ledger.settle(first, "executed")
        with pytest.raises(BudgetStoreError):
            ledger.check(_call("c2"), "destructive", [BUDGET])
    finally:
        postgres_cluster.start()
    # The same store object, a new connection: the first reservation still counts.
    assert isinstance(ledger.reserve(_call("c2"), "destructive", [BUDGET]), BudgetDenial)
    ledger.settle(first, "unknown")
    assert [(row.call_id, row.status) for row in ledger.ledger()] == [("c1", "unknown")]


def test_a_database_not_yet_migrated_is_refused_with_the_command_that_fixes_it(
    postgres_url: str,
) -> None:
    with pytest.raises(BudgetStoreError, match="proctor store migrate"):
        PostgresBudgetLedger(PostgresTarget(postgres_url))
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT to_regclass('budget_ledger')").fetchone() == (None,)


def test_a_database_newer_than_the_code_is_refused(postgres_url: str) -> None:
    migrate(PostgresTarget(postgres_url))
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO proctor_schema (version, description) VALUES (%s, 'future')",
            (latest_version() + 1,),
        )
    with pytest.raises(BudgetStoreError, match="newer than this Proctor knows"):
        PostgresBudgetLedger(PostgresTarget(postgres_url))


def test_an_unreachable_server_is_a_budget_store_error_without_the_password() -> None:
    with pytest.raises(BudgetStoreError) as caught:
        PostgresBudgetLedger(PostgresTarget("postgresql://u:hunter2secret@127.0.0.1:1/db"))
    assert "127.0.0.1:1/db" in str(caught.value)
    assert "hunter2secret" not in str(caught.value)


def test_writers_naming_the_same_budgets_in_opposite_orders_never_deadlock(url: str) -> None:
    # Each writer locks its keys in one global order; a deadlock would surface as an error.
    run, actor = Budget("run", "", "agent_run", 1000, 3600), Budget("actor", "", "actor", 40, 3600)
    stores = [PostgresBudgetLedger(PostgresTarget(url), busy_timeout=30) for _ in range(8)]
    start = threading.Barrier(len(stores), timeout=30)
    won: list[int] = []
    errors: list[BaseException] = []

    def work(index: int) -> None:
        order = [run, actor] if index % 2 else [actor, run]
        try:
            start.wait()
            for n in range(10):
                got = stores[index].reserve(_call(f"t{index}-{n}"), "destructive", order)
                if isinstance(got, BudgetReservation):
                    won.append(index)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(stores))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        for store in stores:
            store.close()
    assert errors == [] and len(won) == 40


def test_a_key_held_past_the_busy_timeout_fails_closed_and_writes_nothing(url: str) -> None:
    holder = psycopg.connect(url)
    try:
        holder.execute(
            "SELECT pg_advisory_xact_lock(%s::int4, %s::int4)",
            (0x42554447, lock_id(("b", "run-1"))),
        )
        with PostgresBudgetLedger(PostgresTarget(url), busy_timeout=0.2) as store:
            with pytest.raises(BudgetStoreError, match="could not reserve.*timeout"):
                store.reserve(_call(), "destructive", [BUDGET])
            other_key = Budget("b", "", "agent_run", 1, 3600)
            _reserved(store.reserve(_call(run="run-2"), "destructive", [other_key]))
            holder.rollback()
            assert [row.key for row in store.ledger()] == ["run-2"]
            _reserved(store.reserve(_call(), "destructive", [BUDGET]))
    finally:
        holder.close()
