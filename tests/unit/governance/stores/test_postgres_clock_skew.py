"""A gateway whose clock disagrees with the PostgreSQL server's refuses to open the store:
budget windows would otherwise let calls past a limit."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from governance.core._clock import ManualClock, SystemClock
from governance.stores._approvals import ApprovalStoreError
from governance.stores._approvals_postgres import PostgresApprovalStore
from governance.stores._budgets_model import BudgetStoreError
from governance.stores._budgets_postgres import PostgresBudgetLedger
from governance.stores._postgres import PostgresTarget
from governance.stores._postgres_clock import SKEW_ENV


class FastClock(SystemClock):
    """This machine's real clock, running two minutes fast."""

    def now(self) -> dt.datetime:
        return super().now() + dt.timedelta(minutes=2)


@pytest.fixture
def target(postgres_cluster: Any, migrated_template: str) -> PostgresTarget:
    return PostgresTarget(str(postgres_cluster.create_database(template=migrated_template)))


def test_a_clock_two_minutes_fast_is_refused_naming_both_times_and_ntp(
    target: PostgresTarget,
) -> None:
    with pytest.raises(BudgetStoreError, match=r"sync the clocks \(NTP\)") as caught:
        PostgresBudgetLedger(target, clock=FastClock())
    assert str(caught.value).count("T") >= 2 and "differ by 12" in str(caught.value)


def test_an_injected_clock_is_checked_when_a_tolerance_is_given(target: PostgresTarget) -> None:
    fast = ManualClock(SystemClock().now() + dt.timedelta(minutes=2))
    with pytest.raises(Exception, match="sync the clocks"):
        PostgresApprovalStore(target, clock=fast, max_clock_skew=2.0)
    PostgresApprovalStore(target, clock=fast).close()  # a test clock is not checked by default


def test_a_clock_within_the_tolerance_opens(
    target: PostgresTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    PostgresBudgetLedger(target, clock=SystemClock()).close()
    monkeypatch.setenv(SKEW_ENV, "300")
    PostgresBudgetLedger(target, clock=FastClock()).close()


def test_a_bad_tolerance_setting_is_refused(
    target: PostgresTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SKEW_ENV, "soon")
    with pytest.raises(BudgetStoreError, match=SKEW_ENV):
        PostgresBudgetLedger(target, clock=SystemClock())


def test_a_clock_that_drifts_is_refused_when_the_connection_is_made_again(
    target: PostgresTarget,
) -> None:
    clock = ManualClock(SystemClock().now())
    ledger = PostgresBudgetLedger(target, clock=clock, max_clock_skew=2.0)
    approvals = PostgresApprovalStore(target, clock=clock, max_clock_skew=2.0)
    try:
        ledger.ledger()
        approvals.list()
        clock.advance(120)
        ledger._conn.close()  # the server went away and came back: the store reconnects
        approvals._conn.close()
        with pytest.raises(BudgetStoreError, match="sync the clocks"):
            ledger.ledger()
        with pytest.raises(ApprovalStoreError, match="sync the clocks"):
            approvals.list()
    finally:
        ledger.close()
        approvals.close()
