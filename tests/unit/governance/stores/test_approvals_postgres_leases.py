"""Gateway replicas share one PostgreSQL approval store. Host names, boot ids and PID
namespaces collide between replicas (cloned VMs, pods, containers on one kernel), so each
replica holds a lease on the server's clock: start-up reconciliation expires another replica's
waiters only when its lease lapsed, never while it is alive."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import governance.stores._approvals_postgres as on_server
from governance.core._process_token import current_process_token
from governance.stores._approvals_postgres import PostgresApprovalStore
from governance.stores._postgres import PostgresTarget
from tests.held_deletes import hold_delete

DEAD = "999999:1"  # no such process on any machine the tests run on


@pytest.fixture
def url(postgres_cluster: Any, migrated_template: str) -> str:
    return str(postgres_cluster.create_database(template=migrated_template))


@pytest.fixture
def open_on(url: str) -> Iterator[Any]:
    """Opens the store as another gateway replica would: same host name, same boot id, same
    PID namespace as every other (the case host-based identity got wrong)."""
    opened: list[PostgresApprovalStore] = []

    def open_on() -> PostgresApprovalStore:
        opened.append(PostgresApprovalStore(PostgresTarget(url)))
        return opened[-1]

    yield open_on
    for store in opened:
        store.close()


def _lapse(store: PostgresApprovalStore) -> None:
    """The replica died: its heartbeat stops and its lease runs out on the server's clock."""
    store._stop_heartbeat()
    with store._session("lapse") as conn:
        conn.execute(
            "UPDATE proctor_instances SET lease_until = clock_timestamp() - "
            "make_interval(secs => 1) WHERE instance_id = ?",
            (store._instance,),
        )


def test_replicas_on_one_host_and_kernel_never_expire_each_others_live_waiters(
    open_on: Any,
) -> None:
    a, b = open_on(), open_on()
    # A pid that looks dead from here (another PID namespace) and one that looks alive.
    held = [
        hold_delete(a, "c1", DEAD, awaiting="approval.required"),
        hold_delete(a, "c2", current_process_token(), awaiting="approval.required"),
    ]
    for rid in held:
        a.recorded(rid, "approval.required")
    assert b.reconcile(is_alive=lambda token: False) == []
    assert b.reconcile(is_alive=lambda token: True) == []
    assert [b.get(rid).status for rid in held] == ["pending"] * 2


def test_a_replica_whose_lease_lapsed_has_its_waiters_expired_by_another(open_on: Any) -> None:
    a, b = open_on(), open_on()
    rid = hold_delete(a, "c1", current_process_token(), awaiting="approval.required")
    a.recorded(rid, "approval.required")
    _lapse(a)
    assert b.reconcile(is_alive=lambda token: True) == [rid]
    assert b.get(rid).status_reason == "process restarted"


def test_a_closed_replicas_waiters_are_expired_by_the_next_start_up(open_on: Any) -> None:
    a = open_on()
    rid = hold_delete(a, "c1", current_process_token(), awaiting="approval.required")
    a.recorded(rid, "approval.required")
    a.close()
    assert open_on().reconcile(is_alive=lambda token: True) == [rid]


def test_start_up_judges_its_own_waiters_by_process_and_others_by_lease(open_on: Any) -> None:
    here, there = open_on(), open_on()
    mine = hold_delete(here, "c1", DEAD, awaiting="approval.required")
    theirs = hold_delete(there, "c2", DEAD, awaiting="approval.required")
    here.recorded(mine, "approval.required")
    there.recorded(theirs, "approval.required")
    assert here.reconcile(is_alive=lambda token: False) == [mine]
    assert here.get(theirs).status == "pending"


def test_in_flight_lists_only_dead_writers_judged_by_lease(
    open_on: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    here, there = open_on(), open_on()
    monkeypatch.setattr(on_server, "current_process_token", lambda: DEAD)  # writers that died
    hold_delete(here, "c1", DEAD, awaiting="approval.required")
    hold_delete(there, "c2", DEAD, awaiting="approval.required")
    monkeypatch.undo()
    assert [r.call_id for r in here.in_flight(is_alive=lambda token: False)] == ["c1"]
    _lapse(there)
    assert sorted(r.call_id for r in here.in_flight(is_alive=lambda token: True)) == ["c2"]


def test_a_request_shows_its_waiters_token_without_the_instance(open_on: Any) -> None:
    store = open_on()
    rid = hold_delete(store, "c1", "1234:5678", awaiting="approval.required")
    assert store.get(rid).waiter == "1234:5678"
    with pytest.raises(ValueError, match="waiter"):
        hold_delete(store, "c2", "", awaiting="approval.required")


def test_a_renewed_lease_makes_a_replica_alive_again(open_on: Any) -> None:
    a, b = open_on(), open_on()
    rid = hold_delete(a, "c1", DEAD, awaiting="approval.required")
    a.recorded(rid, "approval.required")
    _lapse(a)
    a._renew_lease()  # what its heartbeat does every RENEW_SECONDS
    assert b.reconcile(is_alive=lambda token: False) == []
    assert b.get(rid).status == "pending"


def test_each_store_opened_gets_its_own_instance_id(open_on: Any) -> None:
    first, second = open_on(), open_on()
    assert first._instance != second._instance
    assert first._heartbeat.is_alive() and first._heartbeat.daemon
    first.close()
    assert not first._heartbeat.is_alive()
