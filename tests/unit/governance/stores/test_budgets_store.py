"""The budget ledger: scope keys, counted impacts, windows, settling, and two-person resets."""

from __future__ import annotations

import dataclasses
import datetime as dt
import sqlite3
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from governance import GovernanceError, ManualClock, Principal, ToolCall, ToolDescriptor
from governance.core._contracts import Impact
from governance.stores._budgets import (
    SCOPE_ORDER,
    Budget,
    BudgetDenial,
    BudgetReservation,
    BudgetResetRefused,
    BudgetStore,
    BudgetStoreError,
)
from governance.stores._budgets_memory import MemoryBudgetLedger
from tests.store_backends import Backend

START = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
ANN = Principal("ann", "bot", "ops")


def _call(
    tool: str = "fs.delete",
    *,
    run: str = "run-1",
    principal: Principal = ANN,
    call_id: str = "c1",
) -> ToolCall:
    return ToolCall(call_id, tool, {"path": "reports/x"}, run, principal)


def _budget(
    budget_id: str = "b",
    scope: str = "agent_run",
    limit: int = 3,
    window: int = 3600,
    counts: tuple[Impact, ...] = ("destructive",),
    tools: tuple[str, ...] = (),
) -> Budget:
    return Budget(budget_id, "", scope, limit, window, counts, tools)  # type: ignore[arg-type]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def store(backend: Backend, clock: ManualClock) -> Iterator[BudgetStore]:
    """Every test using this fixture is a contract test: it runs on every backend."""
    with backend.open(BudgetStore, "budgets.db", clock=clock) as opened:
        yield opened


def _reserved(result: BudgetReservation | BudgetDenial) -> BudgetReservation:
    assert isinstance(result, BudgetReservation), result
    return result


def _denied(result: BudgetReservation | BudgetDenial) -> BudgetDenial:
    assert isinstance(result, BudgetDenial), result
    return result


# --- scope keys, impacts, globs ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("scope", "key"),
    [("agent_run", "run-1"), ("actor", "ann"), ("agent", "bot"), ("team", "ops"),
     ("tool", "fs.delete")],
)  # fmt: skip
def test_each_scope_counts_under_its_own_key(store: BudgetStore, scope: str, key: str) -> None:
    budget = _budget(scope=scope, limit=1)
    assert budget.key_for(_call()) == key
    _reserved(store.reserve(_call(), "destructive", [budget]))
    assert [row.key for row in store.ledger()] == [key]
    assert _denied(store.reserve(_call(call_id="c2"), "destructive", [budget])).key == key


@pytest.mark.parametrize(
    ("scope", "other"),
    [
        ("agent_run", _call(run="run-2")),
        ("actor", _call(principal=Principal("bob", "bot", "ops"))),
        ("agent", _call(principal=Principal("ann", "other-bot", "ops"))),
        ("team", _call(principal=Principal("ann", "bot", "sales"))),
        ("tool", _call("email.send")),
    ],
)
def test_a_different_key_has_its_own_count(store: BudgetStore, scope: str, other: ToolCall) -> None:
    budget = _budget(scope=scope, limit=1)
    _reserved(store.reserve(_call(), "destructive", [budget]))
    _denied(store.reserve(_call(call_id="c2"), "destructive", [budget]))
    _reserved(store.reserve(other, "destructive", [budget]))


def _descriptor(action_type: str, *, reversible: bool, external: bool) -> ToolDescriptor:
    return ToolDescriptor(
        name="x.tool",
        description="",
        input_schema={},
        source="local",
        action_type=action_type,  # type: ignore[arg-type]
        risk="medium",
        reversible=reversible,
        external_side_effect=external,
        idempotent=False,
    )


def test_a_declared_write_that_is_irreversible_counts_as_destructive(store: BudgetStore) -> None:
    budget = _budget(limit=1, counts=("destructive",))
    irreversible = _descriptor("write", reversible=False, external=False)
    assert irreversible.impact == "destructive"
    _reserved(store.reserve(_call("x.tool"), irreversible.impact, [budget]))
    assert _denied(store.reserve(_call("x.tool"), irreversible.impact, [budget])).used == 1


def test_an_external_read_counts_as_destructive(store: BudgetStore) -> None:
    external = _descriptor("read", reversible=True, external=True)
    result = _reserved(store.reserve(_call("x.tool"), external.impact, [_budget()]))
    assert len(result.ids) == 1 and store.ledger()[0].impact == "destructive"


def test_a_reversible_write_is_not_counted_by_a_destructive_budget(store: BudgetStore) -> None:
    write = _descriptor("write", reversible=True, external=False)
    result = _reserved(store.reserve(_call("x.tool"), write.impact, [_budget(limit=1)]))
    assert result.empty and result.ids == ()
    assert store.ledger() == []


def test_a_read_never_counts_even_when_every_countable_impact_is_listed(
    store: BudgetStore,
) -> None:
    budget = _budget(limit=1, counts=("write", "destructive", "unknown"))
    for n in range(5):
        assert _reserved(store.reserve(_call(call_id=f"c{n}"), "read", [budget])).empty
    assert store.ledger() == []
    with pytest.raises(ValueError, match="read never counts"):
        _budget(counts=("read",))  # type: ignore[arg-type]


def test_write_and_unknown_count_only_where_listed(store: BudgetStore) -> None:
    writes = _budget("writes", limit=5, counts=("write",))
    unknowns = _budget("unknowns", limit=5, counts=("unknown",))
    assert _reserved(store.reserve(_call(), "write", [writes, unknowns])).budget_ids == ("writes",)
    assert _reserved(store.reserve(_call(), "unknown", [writes, unknowns])).budget_ids == (
        "unknowns",
    )
    assert _reserved(store.reserve(_call(), "destructive", [writes, unknowns])).empty


def test_an_impact_that_is_not_an_impact_is_refused_not_ignored(store: BudgetStore) -> None:
    with pytest.raises(BudgetStoreError, match="unknown impact 'external'"):
        store.reserve(_call(), "external", [_budget()])  # type: ignore[arg-type]
    assert store.ledger() == []


def test_tool_globs_limit_a_budget_to_the_matching_tools(store: BudgetStore) -> None:
    email = _budget(limit=1, tools=("email.*", "sms.send"))
    assert _reserved(store.reserve(_call("fs.delete"), "destructive", [email])).empty
    assert _reserved(store.reserve(_call("sms.sender"), "destructive", [email])).empty
    _reserved(store.reserve(_call("email.send"), "destructive", [email]))
    _denied(store.reserve(_call("email.forward"), "destructive", [email]))
    _denied(store.reserve(_call("sms.send"), "destructive", [email]))
    assert _reserved(store.reserve(_call("Email.send"), "destructive", [email])).empty


# --- limits and the most restrictive budget ---------------------------------------------------


def test_the_limit_th_call_passes_and_the_next_is_denied_with_nothing_written(
    store: BudgetStore,
) -> None:
    budget = _budget("destructive-per-run", limit=3)
    for n in range(3):
        _reserved(store.reserve(_call(call_id=f"c{n}"), "destructive", [budget]))
    denial = _denied(store.reserve(_call(call_id="c9"), "destructive", [budget]))
    assert denial == BudgetDenial("destructive-per-run", "agent_run", "run-1", 3, 3, 3600)
    assert denial.reason == "budget_exhausted:agent_run"
    assert "3 of 3" in denial.message
    assert [row.call_id for row in store.ledger()] == ["c0", "c1", "c2"]


def test_the_actor_budget_is_named_when_it_runs_out_first(store: BudgetStore) -> None:
    per_run = _budget("per-run", scope="agent_run", limit=5)
    per_actor = _budget("per-actor", scope="actor", limit=2)
    budgets = [per_run, per_actor]
    assert _reserved(store.reserve(_call(run="r1"), "destructive", budgets)).budget_ids == (
        "per-run",
        "per-actor",
    )
    _reserved(store.reserve(_call(run="r2"), "destructive", budgets))
    denial = _denied(store.reserve(_call(run="r1"), "destructive", budgets))
    assert (denial.reason, denial.budget_id, denial.key) == ("budget_exhausted:actor", "per-actor",
                                                             "ann")  # fmt: skip


def test_a_denial_writes_no_row_for_the_budgets_that_still_had_room(store: BudgetStore) -> None:
    roomy = _budget("roomy", scope="agent_run", limit=10)
    tight = _budget("tight", scope="tool", limit=1)
    _reserved(store.reserve(_call(), "destructive", [roomy, tight]))
    _denied(store.reserve(_call(), "destructive", [roomy, tight]))
    assert [row.budget_id for row in store.ledger()] == ["roomy", "tight"]
    assert store.usage(_call(), [roomy, tight]) == {"roomy": 1, "tight": 1}


def test_the_budget_furthest_over_its_limit_is_named_whatever_its_scope(
    store: BudgetStore,
) -> None:
    # Four calls fill both; then the team budget is tightened to 1 (as a policy edit would).
    run, team = _budget("run", "agent_run", 4), _budget("team", "team", 4)
    for n in range(4):
        _reserved(store.reserve(_call(call_id=f"c{n}"), "destructive", [run, team]))
    tightened = _budget("team", "team", 1)
    denial = _denied(store.reserve(_call(), "destructive", [run, tightened]))
    assert (denial.budget_id, denial.used, denial.limit) == ("team", 4, 1)


def test_ties_are_broken_by_scope_order_then_by_id(store: BudgetStore) -> None:
    budgets = [
        _budget("z-tool", "tool", 1),
        _budget("b-actor", "actor", 1),
        _budget("a-actor", "actor", 1),
        _budget("team", "team", 1),
    ]
    _reserved(store.reserve(_call(), "destructive", budgets))
    assert _denied(store.reserve(_call(), "destructive", budgets)).budget_id == "a-actor"
    run = _budget("run", "agent_run", 1)
    _reserved(store.reserve(_call(run="other"), "destructive", [run]))
    denial = _denied(store.reserve(_call(run="other"), "destructive", [*budgets, run]))
    assert denial.budget_id == "run" and SCOPE_ORDER[0] == "agent_run"


def test_check_names_the_denial_reserve_would_give_and_writes_nothing(
    store: BudgetStore,
) -> None:
    run, actor = _budget("run", "agent_run", 5), _budget("actor", "actor", 1)
    assert store.check(_call(), "destructive", [run, actor]) is None
    assert store.check(_call(), "read", [run, actor]) is None
    assert store.ledger() == []
    _reserved(store.reserve(_call(), "destructive", [run, actor]))
    denial = store.check(_call(), "destructive", [run, actor])
    assert denial == _denied(store.reserve(_call(), "destructive", [run, actor]))
    assert denial is not None and denial.reason == "budget_exhausted:actor"
    assert store.check(_call(), "write", [run, actor]) is None
    assert len(store.ledger()) == 2
    with pytest.raises(BudgetStoreError, match="unknown impact"):
        store.check(_call(), "external", [run])  # type: ignore[arg-type]


def test_budget_ids_given_twice_are_refused(store: BudgetStore) -> None:
    with pytest.raises(BudgetStoreError, match="unique"):
        store.reserve(_call(), "destructive", [_budget("b"), _budget("b", scope="actor")])
    assert store.ledger() == []


# --- the sliding window -----------------------------------------------------------------------


def test_calls_leave_the_window_exactly_window_seconds_later(
    store: BudgetStore, clock: ManualClock
) -> None:
    budget = _budget(limit=2, window=60)
    _reserved(store.reserve(_call(call_id="c1"), "destructive", [budget]))
    clock.advance(30)
    _reserved(store.reserve(_call(call_id="c2"), "destructive", [budget]))
    clock.advance(29.999999)
    _denied(store.reserve(_call(call_id="c3"), "destructive", [budget]))
    clock.advance(0.000001)  # c1 is now exactly 60 s old: out of the window
    assert store.usage(_call(), [budget]) == {"b": 1}
    _reserved(store.reserve(_call(call_id="c3"), "destructive", [budget]))
    _denied(store.reserve(_call(call_id="c4"), "destructive", [budget]))
    clock.advance(30)  # c2 leaves
    _reserved(store.reserve(_call(call_id="c4"), "destructive", [budget]))
    assert len(store.ledger()) == 4, "a call leaving the window is not deleted"


def test_a_clock_that_steps_back_keeps_every_call_counted(
    store: BudgetStore, clock: ManualClock
) -> None:
    budget = _budget(limit=1, window=60)
    _reserved(store.reserve(_call(), "destructive", [budget]))
    clock.advance(-3600)
    _denied(store.reserve(_call(), "destructive", [budget]))


# --- settling ---------------------------------------------------------------------------------


def test_a_released_call_frees_its_slot(store: BudgetStore) -> None:
    budget = _budget(limit=1)
    first = _reserved(store.reserve(_call(call_id="c1"), "destructive", [budget]))
    _denied(store.reserve(_call(call_id="c2"), "destructive", [budget]))
    store.settle(first, "released")
    _reserved(store.reserve(_call(call_id="c2"), "destructive", [budget]))
    assert [row.status for row in store.ledger()] == ["released", "reserved"]


@pytest.mark.parametrize("outcome", ["executed", "unknown"])
def test_an_executed_or_unknown_call_keeps_counting(store: BudgetStore, outcome: str) -> None:
    budget = _budget(limit=1)
    first = _reserved(store.reserve(_call(), "destructive", [budget]))
    store.settle(first, outcome)  # type: ignore[arg-type]
    _denied(store.reserve(_call(call_id="c2"), "destructive", [budget]))
    (row,) = store.ledger()
    assert row.status == outcome and row.settled_at == START


def test_a_reservation_nobody_settled_keeps_counting_after_a_restart(
    tmp_path: Path, clock: ManualClock
) -> None:
    budget = _budget(limit=1)
    with BudgetStore(tmp_path / "b.db", clock=clock) as first:
        _reserved(first.reserve(_call(), "destructive", [budget]))
    with BudgetStore(tmp_path / "b.db", clock=clock) as second:
        _denied(second.reserve(_call(call_id="c2"), "destructive", [budget]))


def test_a_settled_row_cannot_be_settled_otherwise(store: BudgetStore) -> None:
    budget = _budget(limit=1)
    first = _reserved(store.reserve(_call(), "destructive", [budget]))
    store.settle(first, "executed")
    store.settle(first, "executed")  # the same outcome again is a no-op
    with pytest.raises(BudgetStoreError, match="already settled as executed"):
        store.settle(first, "released")
    assert [row.status for row in store.ledger()] == ["executed"]
    _denied(store.reserve(_call(call_id="c2"), "destructive", [budget]))


def test_settling_rows_that_do_not_exist_or_belong_to_another_call_fails(
    store: BudgetStore,
) -> None:
    real = _reserved(store.reserve(_call(call_id="c1"), "destructive", [_budget()]))
    with pytest.raises(BudgetStoreError, match="no ledger rows"):
        store.settle(BudgetReservation((99,), "c1", "run-1", "fs.delete"), "released")
    with pytest.raises(BudgetStoreError, match="belongs to call 'c1'"):
        store.settle(BudgetReservation(real.ids, "c2", "run-1", "fs.delete"), "released")
    with pytest.raises(ValueError, match="outcome"):
        store.settle(real, "failed")  # type: ignore[arg-type]
    assert [row.status for row in store.ledger()] == ["reserved"]


def test_an_empty_reservation_settles_to_nothing(store: BudgetStore) -> None:
    empty = _reserved(store.reserve(_call(), "destructive", []))
    store.settle(empty, "released")
    assert store.ledger() == [] and store.status([_budget()]) == []


# --- two-person reset -------------------------------------------------------------------------


def _exhaust(store: BudgetStore, budget: Budget, call: ToolCall | None = None) -> None:
    call = call or _call()
    while isinstance(store.reserve(call, "destructive", [budget]), BudgetReservation):
        pass


@pytest.mark.parametrize(
    ("by", "approved_by", "reason", "agent", "code"),
    [
        ("carol", "carol", "loop fixed", None, "same_person"),
        ("carol", " Carol ", "loop fixed", None, "same_person"),
        ("carol", "dave", "", None, "missing_reason"),
        ("carol", "dave", "   ", None, "missing_reason"),
        ("", "dave", "loop fixed", None, "missing_operator"),
        ("carol", "  ", "loop fixed", None, "missing_operator"),
        ("carol", "ann", "loop fixed", Principal("ann", "bot", "ops"), "self_release"),
        ("bot", "dave", "loop fixed", Principal("ann", "bot", "ops"), "self_release"),
    ],
)
def test_a_reset_without_two_other_people_and_a_reason_is_refused(
    store: BudgetStore,
    by: str,
    approved_by: str,
    reason: str,
    agent: Principal | None,
    code: str,
) -> None:
    budget = _budget(limit=1)
    _exhaust(store, budget, _call(principal=Principal("erin", "robot", "ops")))
    with pytest.raises(BudgetResetRefused) as info:
        store.reset(budget_id="b", key="run-1", by=by, approved_by=approved_by, reason=reason,
                    agent_principal=agent)  # fmt: skip
    assert info.value.code == code and isinstance(info.value, GovernanceError)
    assert store.resets() == []
    _denied(store.reserve(_call(), "destructive", [budget]))


def test_whoever_was_charged_to_the_key_cannot_release_it(store: BudgetStore) -> None:
    budget = _budget(limit=1)
    _exhaust(store, budget)  # charged to actor ann, agent bot
    for by, approved_by in (("ann", "dave"), ("carol", "BOT")):
        with pytest.raises(BudgetResetRefused, match="charged to b 'run-1'") as info:
            store.reset(budget_id="b", key="run-1", by=by, approved_by=approved_by, reason="r")
        assert info.value.code == "self_release"
    assert store.resets() == []


def test_a_valid_reset_lets_calls_through_and_keeps_every_old_row(
    store: BudgetStore, clock: ManualClock
) -> None:
    budget = _budget(limit=2)
    first = _reserved(store.reserve(_call(call_id="c1"), "destructive", [budget]))
    store.settle(first, "executed")
    _reserved(store.reserve(_call(call_id="c2"), "destructive", [budget]))
    _denied(store.reserve(_call(call_id="c3"), "destructive", [budget]))
    before = store.ledger("b", "run-1")
    clock.advance(5)

    reset = store.reset(budget_id="b", key="run-1", by="carol", approved_by="dave",
                        reason="loop fixed in PR 12", agent_principal=ANN)  # fmt: skip

    assert (reset.by, reset.approved_by, reset.reason) == ("carol", "dave", "loop fixed in PR 12")
    assert reset.at == START + dt.timedelta(seconds=5) and reset.after_row == before[-1].id
    assert store.resets() == [reset]
    assert store.ledger("b", "run-1") == before, "a reset never deletes or rewrites evidence"
    assert [row.status for row in before] == ["executed", "reserved"]
    (status,) = store.status([budget])
    assert (status.used, status.remaining, status.watermark) == (0, 2, reset.at)
    _reserved(store.reserve(_call(call_id="c3"), "destructive", [budget]))
    _reserved(store.reserve(_call(call_id="c4"), "destructive", [budget]))
    _denied(store.reserve(_call(call_id="c5"), "destructive", [budget]))
    assert len(store.ledger("b", "run-1")) == 4


def test_calls_in_the_same_microsecond_as_a_reset_still_count(store: BudgetStore) -> None:
    # The clock never moves here: a time watermark would let every later call through.
    budget = _budget(limit=1)
    _exhaust(store, budget)
    store.reset(budget_id="b", key="run-1", by="carol", approved_by="dave", reason="r")
    _reserved(store.reserve(_call(call_id="c2"), "destructive", [budget]))
    _denied(store.reserve(_call(call_id="c3"), "destructive", [budget]))


def test_a_reset_releases_only_its_own_budget_and_key(store: BudgetStore) -> None:
    run, actor = _budget("run", "agent_run", 1), _budget("actor", "actor", 5)
    _exhaust(store, run, _call(run="r1"))
    _exhaust(store, run, _call(run="r2"))
    store.reset(budget_id="run", key="r1", by="carol", approved_by="dave", reason="r")
    _reserved(store.reserve(_call(run="r1"), "destructive", [run]))
    _denied(store.reserve(_call(run="r2"), "destructive", [run]))
    assert store.usage(_call(run="r2"), [run, actor]) == {"run": 1, "actor": 0}


def test_evidence_rows_cannot_be_deleted_or_rewritten_behind_the_stores_back(
    tmp_path: Path, clock: ManualClock
) -> None:
    with BudgetStore(tmp_path / "budgets.db", clock=clock) as store:
        budget = _budget(limit=1)
        reservation = _reserved(store.reserve(_call(), "destructive", [budget]))
        store.settle(reservation, "executed")
        store.reset(budget_id="b", key="run-1", by="carol", approved_by="dave", reason="r")
        conn = sqlite3.connect(store.path)
        try:
            for sql in (
                "DELETE FROM budget_ledger",
                "UPDATE budget_ledger SET status = 'released'",
                "UPDATE budget_ledger SET key = 'elsewhere'",
                "DELETE FROM budget_resets",
                "UPDATE budget_resets SET after_row = 0",
            ):
                with pytest.raises(sqlite3.IntegrityError):
                    conn.execute(sql)
        finally:
            conn.close()
        assert [row.status for row in store.ledger()] == ["executed"]
        assert store.resets()[0].after_row == reservation.ids[0]


def test_the_memory_ledger_has_no_way_to_delete_or_rewrite_a_row(clock: ManualClock) -> None:
    assert {name for name in dir(MemoryBudgetLedger) if not name.startswith("_")} == {
        "check", "close", "ledger", "reserve", "reset", "resets", "settle", "status", "usage",
    }  # fmt: skip
    with MemoryBudgetLedger(clock=clock) as store:
        budget = _budget(limit=1)
        first = _reserved(store.reserve(_call(), "destructive", [budget]))
        store.settle(first, "executed")
        store.reset(budget_id="b", key="run-1", by="carol", approved_by="dave", reason="r")
        rows, resets = store.ledger(), store.resets()
        # What a reader gets are copies: emptying them or changing a row leaves the store alone.
        rows.clear()
        resets.clear()
        with pytest.raises(dataclasses.FrozenInstanceError):
            store.ledger()[0].status = "released"  # type: ignore[misc]
        with pytest.raises(dataclasses.FrozenInstanceError):
            store.resets()[0].after_row = 0  # type: ignore[misc]
        before = (store.ledger(), store.resets())
        # Every public writer: new rows are appended, the earlier ones stay as they were.
        with pytest.raises(BudgetStoreError, match="already settled as executed"):
            store.settle(first, "released")
        second = _reserved(store.reserve(_call(call_id="c2"), "destructive", [budget]))
        store.settle(second, "released")
        store.reset(budget_id="b", key="run-1", by="carol", approved_by="dave", reason="again")
        assert store.check(_call(), "destructive", [budget]) is None
        store.usage(_call(), [budget])
        store.status([budget])
        assert store.ledger()[:1] == before[0] and [r.status for r in before[0]] == ["executed"]
        assert store.resets()[:1] == before[1] and before[1][0].after_row == first.ids[0]
        assert [row.status for row in store.ledger()] == ["executed", "released"]


# --- usage and status -------------------------------------------------------------------------


def test_usage_reports_every_budget_under_this_calls_keys(store: BudgetStore) -> None:
    run, actor, email = _budget("run"), _budget("actor", "actor"), _budget("email", tools=("e.*",))
    _reserved(store.reserve(_call(run="r1"), "destructive", [run, actor, email]))
    _reserved(store.reserve(_call(run="r2"), "destructive", [run, actor, email]))
    assert store.usage(_call(run="r1"), [run, actor, email]) == {"run": 1, "actor": 2, "email": 0}
    assert store.usage(_call(run="r3"), []) == {}


def test_status_has_one_row_per_budget_and_key_seen(store: BudgetStore, clock: ManualClock) -> None:
    run, actor, idle = _budget("run", limit=1), _budget("actor", "actor", 5), _budget("idle")
    _reserved(store.reserve(_call(run="r2"), "destructive", [run, actor]))
    _reserved(store.reserve(_call(run="r1"), "destructive", [run, actor]))
    store.reset(budget_id="run", key="r3", by="carol", approved_by="dave", reason="pre-emptive")
    rows = store.status([run, actor, idle])
    assert [(r.budget_id, r.key, r.used, r.remaining) for r in rows] == [
        ("actor", "ann", 2, 3),
        ("run", "r1", 1, 0),
        ("run", "r2", 1, 0),
        ("run", "r3", 0, 1),
    ]
    assert rows[1].exhausted and not rows[0].exhausted
    assert [r.watermark for r in rows] == [None, None, None, START]
    clock.advance(3600)
    assert [r.used for r in store.status([run, actor])] == [0, 0, 0, 0]


# --- failures are BudgetStoreErrors (the firewall then blocks) --------------------------------


def test_a_store_that_cannot_be_opened_raises_a_budget_store_error(tmp_path: Path) -> None:
    with pytest.raises(BudgetStoreError, match="cannot open budget store"):
        BudgetStore(tmp_path)  # a directory
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(BudgetStoreError):
        BudgetStore(junk)


def test_a_closed_store_refuses_everything(backend: Backend) -> None:
    store = backend.open(BudgetStore)
    store.close()
    store.close()
    with pytest.raises(BudgetStoreError, match="closed"):
        store.reserve(_call(), "destructive", [_budget()])
    with pytest.raises(BudgetStoreError, match="closed"):
        store.reserve(_call(), "read", [_budget()])
    with pytest.raises(BudgetStoreError, match="closed"):
        store.check(_call(), "destructive", [_budget()])
    with pytest.raises(BudgetStoreError, match="closed"):
        store.ledger()


def test_a_naive_clock_fails_closed(backend: Backend) -> None:
    class NaiveClock:
        def now(self) -> dt.datetime:
            return dt.datetime(2026, 1, 1)  # noqa: DTZ001 - the point of the test

    with backend.open(BudgetStore, clock=NaiveClock()) as store:
        with pytest.raises(BudgetStoreError, match="naive"):
            store.reserve(_call(), "destructive", [_budget()])
        assert store.ledger() == []


def test_a_database_locked_past_the_busy_timeout_fails_closed(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    with BudgetStore(path, busy_timeout=0.05) as store:
        holder = sqlite3.connect(path, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            with pytest.raises(BudgetStoreError, match="could not reserve"):
                store.reserve(_call(), "destructive", [_budget()])
            holder.execute("ROLLBACK")
        finally:
            holder.close()
        assert store.ledger() == []
        _reserved(store.reserve(_call(), "destructive", [_budget()]))


def test_threads_with_their_own_stores_never_overshoot(tmp_path: Path) -> None:
    budget = _budget(limit=7)
    stores = [BudgetStore(tmp_path / "b.db") for _ in range(4)]
    start = threading.Barrier(len(stores), timeout=10)
    won: list[int] = []
    errors: list[BaseException] = []

    def attempt(store: BudgetStore, index: int) -> None:
        try:
            start.wait()
            for n in range(5):
                call = _call(call_id=f"t{index}-{n}")
                if isinstance(store.reserve(call, "destructive", [budget]), BudgetReservation):
                    won.append(index)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=attempt, args=(s, i)) for i, s in enumerate(stores)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert not any(thread.is_alive() for thread in threads) and errors == []
        assert len(won) == 7 and len(stores[0].ledger()) == 7
    finally:
        for store in stores:
            store.close()


def test_threads_sharing_a_memory_ledger_never_overshoot(clock: ManualClock) -> None:
    """Each round, eight threads reserve the last slot of a fresh key at once: one wins."""
    rounds, threads_n = 150, 8
    budget = _budget(limit=1)
    start = threading.Barrier(threads_n, timeout=20)
    won: list[str] = []
    errors: list[BaseException] = []
    interval = sys.getswitchinterval()

    def attempt(store: MemoryBudgetLedger, index: int) -> None:
        try:
            for n in range(rounds):
                start.wait()
                call = _call(run=f"run-{n}", call_id=f"t{index}")
                if isinstance(store.reserve(call, "destructive", [budget]), BudgetReservation):
                    won.append(call.run_id)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
            start.abort()

    sys.setswitchinterval(1e-6)  # switch threads as often as possible: widen every race
    try:
        with MemoryBudgetLedger(clock=clock) as store:
            threads = [threading.Thread(target=attempt, args=(store, i)) for i in range(threads_n)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=60)
            assert not any(thread.is_alive() for thread in threads) and errors == []
            assert sorted(won) == sorted(f"run-{n}" for n in range(rounds))
            assert len(store.ledger()) == rounds
    finally:
        sys.setswitchinterval(interval)
