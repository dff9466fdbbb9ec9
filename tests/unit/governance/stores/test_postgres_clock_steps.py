"""A clock that steps AFTER a store's connection opened (an NTP step, a VM resumed from a
snapshot) is caught on that long-lived connection: the next call fails closed with the store's
own error, every call after it too until the clocks agree again. The approval store's heartbeat
also compares the clocks, and keeps renewing its lease (liveness, on the server's clock)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest

import governance.stores._postgres_clock as clocks
from governance.core._clock import ManualClock, SystemClock
from governance.core._errors import AuditWriteError
from governance.stores._approvals import ApprovalStoreError
from governance.stores._approvals_postgres import PostgresApprovalStore
from governance.stores._audit_postgres import PostgresAuditLog
from governance.stores._budgets_model import BudgetStoreError
from governance.stores._budgets_postgres import PostgresBudgetLedger
from governance.stores._postgres import PostgresTarget
from tests.held_deletes import hold_delete

HOUR = 3600.0


@pytest.fixture
def target(postgres_cluster: Any, migrated_template: str) -> PostgresTarget:
    return PostgresTarget(str(postgres_cluster.create_database(template=migrated_template)))


def _approvals(target: PostgresTarget, clock: ManualClock) -> tuple[Any, Callable[[], object]]:
    store = PostgresApprovalStore(target, clock=clock, max_clock_skew=60.0)
    return store, lambda: hold_delete(store, "c1")


def _budgets(target: PostgresTarget, clock: ManualClock) -> tuple[Any, Callable[[], object]]:
    store = PostgresBudgetLedger(target, clock=clock, max_clock_skew=60.0)
    return store, lambda: store.resets()


def _audit(target: PostgresTarget, clock: ManualClock) -> tuple[Any, Callable[[], object]]:
    store = PostgresAuditLog(target, key=b"k", clock=clock, max_clock_skew=60.0)
    return store, lambda: store.append("run-1", "note", {"n": 1})


STORES = {
    "approvals": (_approvals, ApprovalStoreError),
    "budgets": (_budgets, BudgetStoreError),
    "audit": (_audit, AuditWriteError),
}


def _now() -> ManualClock:
    return ManualClock(SystemClock().now())


@pytest.mark.parametrize("kind", sorted(STORES))
def test_a_clock_stepped_back_an_hour_after_open_fails_the_next_call_closed_until_fixed(
    target: PostgresTarget, kind: str
) -> None:
    opener, error = STORES[kind]
    clock = _now()
    store, call = opener(target, clock)
    try:
        call()  # the clocks agree
        clock.advance(-HOUR)
        for _ in range(2):  # refused, and refused again: a failed comparison stays due
            with pytest.raises(error, match=r"differ by 3600\.\d s.*sync the clocks") as caught:
                call()
            assert str(caught.value).count(f"{target.display}'s (") == 1  # the server, named
        clock.advance(HOUR)
        call()  # the clocks agree again
    finally:
        store.close()


def test_a_stepped_clock_writes_no_approval_request(target: PostgresTarget) -> None:
    clock = _now()
    store, _ = _approvals(target, clock)
    try:
        clock.advance(-HOUR)
        with pytest.raises(ApprovalStoreError):
            hold_delete(store, "c1")
        clock.advance(HOUR)
        assert store.list() == []
    finally:
        store.close()


@pytest.mark.parametrize("kind", sorted(STORES))
def test_a_drift_too_small_to_look_like_a_step_is_caught_by_the_periodic_comparison(
    target: PostgresTarget, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    opener, error = STORES[kind]
    clock = _now()
    store, call = opener(target, clock)
    try:
        monkeypatch.setattr(clocks, "STEP_SECONDS", 10 * HOUR)  # nothing looks like a step
        clock.advance(-HOUR)
        monkeypatch.setattr(clocks, "RECHECK_SECONDS", 0.0)  # the comparison is due
        with pytest.raises(error, match="sync the clocks"):
            call()
    finally:
        store.close()


def test_the_approval_heartbeat_compares_the_clocks_and_still_renews_the_lease(
    target: PostgresTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clocks, "STEP_SECONDS", 10 * HOUR)  # only the heartbeat may notice
    clock = _now()
    store, call = _approvals(target, clock)
    try:
        store._stop_heartbeat()  # the test beats by hand
        with store._session("read the lease") as conn:
            before = conn.execute(
                "SELECT lease_until FROM proctor_instances WHERE instance_id = ?",
                (store._instance,),
            ).fetchone()[0]
        clock.advance(-HOUR)
        store._heartbeat_tick()
        with pytest.raises(ApprovalStoreError, match="sync the clocks"):
            call()
        clock.advance(HOUR)
        with store._session("read the lease") as conn:
            after = conn.execute(
                "SELECT lease_until FROM proctor_instances WHERE instance_id = ?",
                (store._instance,),
            ).fetchone()[0]
        assert after > before
    finally:
        store.close()


def test_an_unchecked_clock_reads_no_time_on_a_call(
    target: PostgresTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test or replay clock (no tolerance given) is never compared: no extra round trip."""
    clock = _now()
    store = PostgresBudgetLedger(target, clock=clock)
    try:
        clock.advance(-HOUR)
        compared: list[object] = []
        monkeypatch.setattr(clocks, "check_clock", lambda *args: compared.append(args))
        monkeypatch.setattr(clocks, "RECHECK_SECONDS", 0.0)
        store.resets()
        assert compared == []
    finally:
        store.close()


def test_the_clocks_are_compared_once_per_interval_not_on_every_call(
    target: PostgresTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = ManualClock(SystemClock().now() - dt.timedelta(seconds=0))
    store = PostgresBudgetLedger(target, clock=clock, max_clock_skew=60.0)
    try:
        monkeypatch.setattr(clocks, "STEP_SECONDS", 10 * HOUR)
        compared: list[object] = []
        real = clocks.check_clock
        monkeypatch.setattr(
            clocks, "check_clock", lambda *args: (compared.append(args), real(*args))[1]
        )
        for _ in range(5):
            store.resets()
        assert compared == []
    finally:
        store.close()
