"""The approval store's lifecycle: every legal transition, every illegal one, expiry, errors."""

from __future__ import annotations

import datetime as dt
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from governance.core._canonical import keyed_digest
from governance.core._clock import ManualClock
from governance.core._contracts import Principal
from governance.core._errors import GovernanceError
from governance.core._process_token import current_process_token
from governance.stores._approvals import (
    ApprovalConflict,
    ApprovalError,
    ApprovalNotFound,
    ApprovalRequest,
    ApprovalStore,
    ApprovalStoreError,
    SelfApprovalError,
)
from tests.store_backends import Backend

T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
ALICE = Principal(actor="alice", agent="ops-agent", team="platform")
DIGEST = "sha256:" + "a" * 64
POLICY = "sha256:" + "p" * 64


def _hold(store: ApprovalStore, **overrides: Any) -> ApprovalRequest:
    fields: dict[str, Any] = {
        "run_id": "run-1",
        "call_id": "c1",
        "tool": "fs.delete",
        "arguments": {"path": "notes/a.txt", "recursive": False},
        "arguments_digest": DIGEST,
        "principal": ALICE,
        "policy_digest": POLICY,
        "rule_ids": ("approve-deletes",),
        "reason": "rule:approve-deletes",
        "risk": "high",
    }
    fields.update(overrides)
    return store.create(**fields)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def store(backend: Backend, clock: ManualClock) -> Iterator[ApprovalStore]:
    """Every test using this fixture is a contract test: it runs on every backend."""
    with backend.open(ApprovalStore, "approvals.db", clock=clock) as opened:
        yield opened


# -- creating and reading -------------------------------------------------------------------


def test_a_created_request_is_pending_and_keeps_everything_the_reviewer_saw(
    store: ApprovalStore,
) -> None:
    created = _hold(store, arguments={"path": "données/ü.txt", "opts": {"n": [1, 2]}})
    assert created == store.get("apr-1")
    assert created.id == "apr-1"
    assert (created.run_id, created.call_id, created.tool) == ("run-1", "c1", "fs.delete")
    assert created.arguments == {"path": "données/ü.txt", "opts": {"n": [1, 2]}}
    assert created.arguments_digest == DIGEST
    assert (created.actor, created.agent, created.team) == ("alice", "ops-agent", "platform")
    assert created.policy_digest == POLICY
    assert created.rule_ids == ("approve-deletes",)
    assert (created.reason, created.risk) == ("rule:approve-deletes", "high")
    assert created.status == "pending"
    assert created.created_at == T0 and created.created_at.tzinfo is not None
    assert created.expires_at == T0 + dt.timedelta(seconds=300)
    assert created.decided_by is None and created.decided_at is None and created.comment is None
    assert created.approved_arguments is None and created.status_reason is None
    assert created.consumed is False and created.waiter is None
    assert created.effective_arguments == created.arguments


def test_stored_arguments_digest_the_same_as_the_proposal(store: ApprovalStore) -> None:
    # The firewall re-digests the stored arguments before executing: the JSON round trip
    # (tuples become lists) must not change the canonical bytes.
    proposed = {"paths": ("a", "b"), "n": 1.5, "big": 2**62, "text": "zero\u200bwidth"}
    held = _hold(store, arguments=proposed, arguments_digest=keyed_digest(proposed, b"k"))
    stored = store.get(held.id).arguments
    assert stored == {"paths": ["a", "b"], "n": 1.5, "big": 2**62, "text": "zero\u200bwidth"}
    assert keyed_digest(stored, b"k") == held.arguments_digest


def test_ids_are_sequential_per_file_and_continue_after_reopening(
    tmp_path: Path, clock: ManualClock
) -> None:
    with ApprovalStore(tmp_path / "a.db", clock=clock) as store:
        assert [_hold(store, call_id=f"c{n}").id for n in range(1, 4)] == [
            "apr-1",
            "apr-2",
            "apr-3",
        ]
    with ApprovalStore(tmp_path / "a.db", clock=clock) as store:
        assert _hold(store).id == "apr-4"
        assert [r.call_id for r in store.list()] == ["c1", "c2", "c3", "c1"]
    with ApprovalStore(tmp_path / "b.db", clock=clock) as other:
        assert _hold(other).id == "apr-1"


def test_a_decision_made_through_one_store_is_seen_through_another(
    tmp_path: Path, clock: ManualClock
) -> None:
    with (
        ApprovalStore(tmp_path / "a.db", clock=clock) as gateway,
        ApprovalStore(tmp_path / "a.db", clock=clock) as cli,
    ):
        held = _hold(gateway)
        cli.approve(held.id, "bob")
        assert gateway.get(held.id).status == "approved"
        assert gateway.get(held.id).decided_by == "bob"


def test_the_waiter_token_is_stored_as_given(store: ApprovalStore) -> None:
    token = current_process_token()
    assert _hold(store, waiter=token).waiter == token


def test_list_filters_by_status_and_run(store: ApprovalStore) -> None:
    first = _hold(store, run_id="run-1")
    second = _hold(store, run_id="run-2")
    third = _hold(store, run_id="run-1", call_id="c2")
    store.approve(second.id, "bob")
    assert [r.id for r in store.list()] == [first.id, second.id, third.id]
    assert [r.id for r in store.list(status="pending")] == [first.id, third.id]
    assert [r.id for r in store.list(run_id="run-2")] == [second.id]
    assert [r.id for r in store.list(status="approved", run_id="run-1")] == []
    assert store.list(status="rejected") == []
    with pytest.raises(ValueError, match="unknown approval status"):
        store.list(status="PENDING")  # type: ignore[arg-type]


def test_timestamps_from_a_non_utc_clock_are_stored_as_utc(backend: Backend) -> None:
    plus_two = dt.timezone(dt.timedelta(hours=2))
    local = ManualClock(dt.datetime(2026, 3, 1, 14, 0, tzinfo=plus_two))
    with backend.open(ApprovalStore, clock=local) as store:
        created = _hold(store)
        assert store.now() == T0 and store.now().utcoffset() == dt.timedelta(0)
    assert created.created_at == T0
    assert created.created_at.utcoffset() == dt.timedelta(0)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"risk": "extreme"}, "unknown risk"),
        ({"rule_ids": "approve-deletes"}, "rule_ids"),
        ({"rule_ids": ("ok", 3)}, "rule_ids"),
        ({"arguments": {"x": float("nan")}}, "cannot be stored as JSON"),
        ({"arguments": {"x": object()}}, "cannot be stored as JSON"),
        ({"arguments": ["not", "a", "mapping"]}, "must be a mapping"),
        ({"run_id": ""}, "run_id"),
        ({"tool": "   "}, "tool"),
        ({"arguments_digest": ""}, "arguments_digest"),
        ({"policy_digest": ""}, "policy_digest"),
        ({"reason": ""}, "reason"),
        ({"principal": Principal(actor="", agent="a", team="t")}, "principal.actor"),
        ({"waiter": ""}, "waiter"),
        ({"ttl_seconds": 0}, "ttl"),
        ({"ttl_seconds": -5}, "ttl"),
        ({"ttl_seconds": float("nan")}, "ttl"),
        ({"ttl_seconds": float("inf")}, "ttl"),
        ({"ttl_seconds": 1e300}, "too far"),
    ],
)
def test_create_refuses_bad_input_and_stores_nothing(
    store: ApprovalStore, overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        _hold(store, **overrides)
    assert store.list() == []
    assert _hold(store).id == "apr-1", "a refused create must not use up an id"


@pytest.mark.parametrize("ttl", [0, -1.0, float("nan"), True])
def test_a_store_refuses_a_default_ttl_that_is_not_a_positive_duration(
    backend: Backend, ttl: float
) -> None:
    with pytest.raises(ValueError, match="ttl"):
        backend.open(ApprovalStore, default_ttl_seconds=ttl)


def test_a_naive_clock_is_refused(backend: Backend) -> None:
    naive = ManualClock(dt.datetime(2026, 3, 1, 12, 0))  # noqa: DTZ001 - the point of the test
    with backend.open(ApprovalStore, clock=naive) as store:
        for call in (lambda: _hold(store), store.now, store.expire_due):
            with pytest.raises(ValueError, match="naive"):
                call()


# -- legal transitions ----------------------------------------------------------------------


def test_approve_records_the_reviewer_the_time_and_the_comment(
    store: ApprovalStore, clock: ManualClock
) -> None:
    held = _hold(store)
    clock.advance(42)
    approved = store.approve(held.id, "bob", comment="looks fine")
    assert approved == store.get(held.id)
    assert approved.status == "approved"
    assert approved.decided_by == "bob"
    assert approved.decided_at == T0 + dt.timedelta(seconds=42)
    assert approved.comment == "looks fine"
    assert approved.approved_arguments is None
    assert approved.effective_arguments == held.arguments
    assert approved.consumed is False


def test_approving_with_edited_arguments_keeps_the_proposal_apart(store: ApprovalStore) -> None:
    held = _hold(store)
    approved = store.approve(held.id, "bob", arguments={"path": "notes/b.txt"})
    assert approved.arguments == {"path": "notes/a.txt", "recursive": False}
    assert approved.arguments_digest == DIGEST
    assert approved.approved_arguments == {"path": "notes/b.txt"}
    assert approved.effective_arguments == {"path": "notes/b.txt"}
    assert store.get(held.id).approved_arguments == {"path": "notes/b.txt"}


def test_an_empty_edit_is_an_edit_not_the_proposal(store: ApprovalStore) -> None:
    approved = store.approve(_hold(store).id, "bob", arguments={})
    assert approved.approved_arguments == {}
    assert approved.effective_arguments == {}


def test_approving_with_unstorable_edited_arguments_changes_nothing(store: ApprovalStore) -> None:
    held = _hold(store)
    with pytest.raises(ValueError, match="approved arguments"):
        store.approve(held.id, "bob", arguments={"n": float("inf")})
    assert store.get(held.id) == held


def test_reject_records_the_reviewer_and_the_required_comment(
    store: ApprovalStore, clock: ManualClock
) -> None:
    held = _hold(store)
    clock.advance(5)
    rejected = store.reject(held.id, "carol", comment="wrong file")
    assert rejected == store.get(held.id)
    assert (rejected.status, rejected.decided_by, rejected.comment) == (
        "rejected",
        "carol",
        "wrong file",
    )
    assert rejected.decided_at == T0 + dt.timedelta(seconds=5)
    assert store.consume(held.id) is False


@pytest.mark.parametrize("comment", ["", "   "])
def test_a_rejection_without_a_comment_is_refused_and_changes_nothing(
    store: ApprovalStore, comment: str
) -> None:
    held = _hold(store)
    with pytest.raises(ValueError, match="comment"):
        store.reject(held.id, "carol", comment=comment)
    assert store.get(held.id) == held


def test_the_proposing_actor_may_reject_their_own_request(store: ApprovalStore) -> None:
    assert store.reject(_hold(store).id, "alice", comment="changed my mind").status == "rejected"


def test_cancel_records_who_and_why(store: ApprovalStore) -> None:
    cancelled = store.cancel(_hold(store).id, by="runner", reason="run ended")
    assert cancelled.status == "cancelled"
    assert (cancelled.decided_by, cancelled.status_reason) == ("runner", "run ended")
    assert cancelled.decided_at == T0


@pytest.mark.parametrize(("by", "reason"), [("", "run ended"), ("runner", "")])
def test_a_cancel_without_who_or_why_is_refused(store: ApprovalStore, by: str, reason: str) -> None:
    held = _hold(store)
    with pytest.raises(ValueError):
        store.cancel(held.id, by=by, reason=reason)
    assert store.get(held.id) == held


# -- self-approval ------------------------------------------------------------------------


@pytest.mark.parametrize("reviewer", ["alice", "Alice", " ALICE "])
def test_the_proposing_actor_cannot_approve_and_nothing_changes(
    store: ApprovalStore, reviewer: str
) -> None:
    held = _hold(store)
    with pytest.raises(SelfApprovalError, match="alice"):
        store.approve(held.id, reviewer, arguments={"path": "/etc/passwd"})
    assert store.get(held.id) == held
    assert store.consume(held.id) is False
    assert store.approve(held.id, "bob").decided_by == "bob", "another reviewer still can"


@pytest.mark.parametrize("reviewer", ["", "  "])
def test_an_empty_reviewer_is_refused_and_nothing_changes(
    store: ApprovalStore, reviewer: str
) -> None:
    held = _hold(store)
    with pytest.raises(ValueError, match="reviewer"):
        store.approve(held.id, reviewer)
    with pytest.raises(ValueError, match="reviewer"):
        store.reject(held.id, reviewer, comment="no")
    assert store.get(held.id) == held


# -- illegal transitions --------------------------------------------------------------------


def _to_approved(store: ApprovalStore, rid: str, clock: ManualClock) -> None:
    store.approve(rid, "bob")


def _to_rejected(store: ApprovalStore, rid: str, clock: ManualClock) -> None:
    store.reject(rid, "carol", comment="no")


def _to_expired(store: ApprovalStore, rid: str, clock: ManualClock) -> None:
    clock.advance(300)
    assert store.expire_due() == [rid]


def _to_cancelled(store: ApprovalStore, rid: str, clock: ManualClock) -> None:
    store.cancel(rid, by="runner", reason="run ended")


FINAL_STATES: dict[str, tuple[Callable[[ApprovalStore, str, ManualClock], None], str]] = {
    "approved": (_to_approved, "apr-1 is already approved by bob"),
    "rejected": (_to_rejected, "apr-1 is already rejected by carol"),
    "expired": (_to_expired, "apr-1 has expired"),
    "cancelled": (_to_cancelled, "apr-1 was cancelled by runner: run ended"),
}
ATTEMPTS: dict[str, Callable[[ApprovalStore, str], object]] = {
    "approve": lambda s, rid: s.approve(rid, "dave"),
    "approve-edited": lambda s, rid: s.approve(rid, "dave", arguments={"path": "x"}),
    "reject": lambda s, rid: s.reject(rid, "dave", comment="too late"),
    "cancel": lambda s, rid: s.cancel(rid, by="dave", reason="again"),
}


@pytest.mark.parametrize("final", sorted(FINAL_STATES))
@pytest.mark.parametrize("attempt", sorted(ATTEMPTS))
def test_a_decided_request_cannot_be_decided_again(
    store: ApprovalStore, clock: ManualClock, final: str, attempt: str
) -> None:
    settle, message = FINAL_STATES[final]
    held = _hold(store)
    settle(store, held.id, clock)
    before = store.get(held.id)
    assert before.status == final
    with pytest.raises(ApprovalConflict) as caught:
        ATTEMPTS[attempt](store, held.id)
    assert caught.value.current_status == final
    assert caught.value.approval_id == held.id
    assert str(caught.value) == message
    assert store.get(held.id) == before


def test_consume_succeeds_exactly_once_for_an_approved_request(store: ApprovalStore) -> None:
    held = _hold(store)
    store.approve(held.id, "bob")
    assert store.consume(held.id) is True
    assert store.get(held.id).consumed is True
    assert store.consume(held.id) is False
    assert store.get(held.id).status == "approved", "consuming does not change the status"


@pytest.mark.parametrize("state", ["pending", "rejected", "expired", "cancelled"])
def test_only_an_approved_request_can_be_consumed(
    store: ApprovalStore, clock: ManualClock, state: str
) -> None:
    held = _hold(store)
    if state != "pending":
        FINAL_STATES[state][0](store, held.id, clock)
    before = store.get(held.id)
    assert store.consume(held.id) is False
    assert store.get(held.id) == before
    assert before.consumed is False


def test_a_request_consumed_once_stays_consumed_when_approval_is_attempted_again(
    store: ApprovalStore,
) -> None:
    held = _hold(store)
    store.approve(held.id, "bob")
    assert store.consume(held.id)
    with pytest.raises(ApprovalConflict, match="already approved by bob"):
        store.approve(held.id, "dave")
    assert store.consume(held.id) is False


def test_unknown_ids_are_not_found_everywhere(store: ApprovalStore) -> None:
    _hold(store)
    calls: list[Callable[[], object]] = [
        lambda: store.get("apr-9"),
        lambda: store.approve("apr-9", "bob"),
        lambda: store.reject("apr-9", "bob", comment="no"),
        lambda: store.cancel("apr-9", by="bob", reason="no"),
        lambda: store.consume("apr-9"),
        lambda: store.wait("apr-9", timeout=0),
    ]
    for call in calls:
        with pytest.raises(ApprovalNotFound, match="apr-9"):
            call()
    assert [r.status for r in store.list()] == ["pending"]


# -- expiry ---------------------------------------------------------------------------------


def test_the_default_ttl_is_300_seconds(store: ApprovalStore, clock: ManualClock) -> None:
    held = _hold(store)
    clock.advance(299.999)
    assert store.expire_due() == []
    assert store.get(held.id).status == "pending"
    clock.advance(0.001)
    assert store.expire_due() == [held.id]
    expired = store.get(held.id)
    assert (expired.status, expired.status_reason) == ("expired", "expired")
    assert expired.decided_at == T0 + dt.timedelta(seconds=300)
    assert expired.decided_by is None
    assert store.expire_due() == [], "expiry is recorded once"


def test_a_configured_default_ttl_and_a_per_request_ttl_are_both_honoured(
    backend: Backend, clock: ManualClock
) -> None:
    with backend.open(ApprovalStore, clock=clock, default_ttl_seconds=60) as store:
        default = _hold(store)
        short = _hold(store, ttl_seconds=5)
        long = _hold(store, ttl_seconds=3600)
        assert default.expires_at == T0 + dt.timedelta(seconds=60)
        assert short.expires_at == T0 + dt.timedelta(seconds=5)
        clock.advance(5)
        assert store.expire_due() == [short.id]
        clock.advance(55)
        assert store.expire_due() == [default.id]
        clock.advance(3539)
        assert store.expire_due() == []
        assert store.get(long.id).status == "pending"


def test_expire_due_leaves_decided_requests_alone(
    store: ApprovalStore, clock: ManualClock
) -> None:
    approved, rejected, pending = _hold(store), _hold(store), _hold(store)
    store.approve(approved.id, "bob")
    store.reject(rejected.id, "bob", comment="no")
    clock.advance(301)
    assert store.expire_due() == [pending.id]
    assert store.get(approved.id).status == "approved"
    assert store.get(rejected.id).status == "rejected"
    assert store.consume(approved.id) is False  # an approval past its deadline cannot be used
    assert store.get(approved.id).consumed is False


@pytest.mark.parametrize("attempt", sorted(ATTEMPTS))
def test_deciding_after_the_ttl_without_a_sweep_marks_it_expired_and_conflicts(
    store: ApprovalStore, clock: ManualClock, attempt: str
) -> None:
    held = _hold(store)
    clock.advance(300)
    with pytest.raises(ApprovalConflict, match=r"^apr-1 has expired$") as caught:
        ATTEMPTS[attempt](store, held.id)
    assert caught.value.current_status == "expired"
    after = store.get(held.id)
    assert (after.status, after.status_reason, after.decided_by) == ("expired", "expired", None)
    assert store.expire_due() == []
    assert store.consume(held.id) is False


def test_self_approval_after_expiry_is_still_refused_as_self_approval(
    store: ApprovalStore, clock: ManualClock
) -> None:
    held = _hold(store)
    clock.advance(301)
    with pytest.raises(SelfApprovalError):
        store.approve(held.id, "alice")
    assert store.get(held.id).status == "pending", "a refused call changes nothing"


# -- wait -----------------------------------------------------------------------------------


def test_wait_returns_a_decided_request_at_once(store: ApprovalStore) -> None:
    held = _hold(store)
    store.reject(held.id, "bob", comment="no")
    assert store.wait(held.id, timeout=5).status == "rejected"


class _RecordsOnTheSecondPoll:
    """The store's clock: once armed, the second reading (the waiter's second poll) is when
    the reviewer's process records its decision on the audit chain."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock, self.store, self.approval_id, self.readings = clock, None, "", 0

    def now(self) -> dt.datetime:
        if self.store is not None:
            self.readings += 1
            if self.readings == 2:
                self.store.recorded(self.approval_id, "approval.approved")
        return self.clock.now()


@pytest.mark.parametrize("awaited", ["approval.approved", None])
def test_wait_returns_a_decision_only_once_it_is_on_the_audit_chain(
    backend: Backend, clock: ManualClock, awaited: str | None
) -> None:
    recorder = _RecordsOnTheSecondPoll(clock)
    with backend.open(ApprovalStore, "approvals.db", clock=recorder) as store:
        held = _hold(store)
        store.approve(held.id, "bob", awaiting=awaited)
        recorder.store, recorder.approval_id = store, held.id
        waited = store.wait(held.id, timeout=30, poll_interval=0.001)
    assert (waited.status, waited.in_flight) == ("approved", None)
    assert recorder.readings == (2 if awaited else 1), "returned once recorded, not before"


def test_wait_gives_up_on_a_decision_never_recorded_when_the_timeout_passes(
    store: ApprovalStore,
) -> None:
    held = _hold(store)
    store.approve(held.id, "bob", awaiting="approval.approved")
    waited = store.wait(held.id, timeout=0.02, poll_interval=0.005)
    assert (waited.status, waited.in_flight) == ("approved", "approval.approved")


def test_wait_returns_the_pending_request_when_the_timeout_passes(store: ApprovalStore) -> None:
    held = _hold(store)
    assert store.wait(held.id, timeout=0) == held
    assert store.wait(held.id, timeout=0.02, poll_interval=0.005).status == "pending"


def test_wait_reports_a_request_past_its_ttl_as_expired(
    store: ApprovalStore, clock: ManualClock
) -> None:
    held = _hold(store, ttl_seconds=10)
    clock.advance(10)
    waited = store.wait(held.id, timeout=5)
    assert (waited.status, waited.status_reason) == ("expired", "expired")
    assert store.get(held.id).status == "expired"


def test_wait_wakes_when_another_store_approves(tmp_path: Path, clock: ManualClock) -> None:
    with (
        ApprovalStore(tmp_path / "a.db", clock=clock) as gateway,
        ApprovalStore(tmp_path / "a.db", clock=clock) as cli,
    ):
        held = _hold(gateway)
        started = threading.Event()
        seen: list[ApprovalRequest] = []

        def waiter() -> None:
            started.set()
            seen.append(gateway.wait(held.id, timeout=20, poll_interval=0.005))

        thread = threading.Thread(target=waiter)
        thread.start()
        assert started.wait(10)
        cli.approve(held.id, "bob")
        thread.join(timeout=20)
        assert not thread.is_alive()
        assert [r.status for r in seen] == ["approved"]
        assert seen[0].decided_by == "bob"


def test_wait_refuses_a_non_positive_poll_interval(store: ApprovalStore) -> None:
    held = _hold(store)
    with pytest.raises(ValueError, match="poll_interval"):
        store.wait(held.id, timeout=1, poll_interval=0)


# -- reconciliation (process liveness faked here; real processes in integration tests) ------


def test_reconcile_expires_only_unresumed_requests_whose_waiter_is_gone(
    store: ApprovalStore,
) -> None:
    me = current_process_token()
    dead = _hold(store, waiter="111:1")
    dead_too = _hold(store, waiter="111:1")
    alive = _hold(store, waiter="222:2")
    detached = _hold(store)
    mine = _hold(store, waiter=me)
    # Approved, but only its dead waiter could resume it: it would look runnable forever.
    decided = _hold(store, waiter="111:1")
    store.approve(decided.id, "bob")
    used = _hold(store, waiter="111:1")
    store.approve(used.id, "bob")
    assert store.consume(used.id)
    rejected = _hold(store, waiter="111:1")
    store.reject(rejected.id, "bob", comment="no")
    alive_approved = _hold(store, waiter="222:2")
    store.approve(alive_approved.id, "bob")
    asked: list[str] = []

    def is_alive(token: str) -> bool:
        asked.append(token)
        return token == "222:2"

    assert store.reconcile(is_alive=is_alive) == [dead.id, dead_too.id, decided.id]
    assert sorted(asked) == ["111:1", "222:2"], "each waiter asked once; never this process"
    for rid in (dead.id, dead_too.id, decided.id):
        after = store.get(rid)
        assert (after.status, after.status_reason) == ("expired", "process restarted")
    assert not store.consume(decided.id)
    assert [store.get(r.id).status for r in (alive, detached, mine)] == ["pending"] * 3
    assert store.get(used.id).status == "approved"  # it ran: what became of it stands
    assert store.get(rejected.id).status == "rejected"
    assert store.get(alive_approved.id).status == "approved"
    assert store.reconcile(is_alive=is_alive) == []
    with pytest.raises(ApprovalConflict, match=r"has expired \(process restarted\)"):
        store.approve(dead.id, "bob")


def test_reconcile_never_expires_this_process_even_if_told_it_is_dead(
    store: ApprovalStore,
) -> None:
    mine = _hold(store, waiter=current_process_token())
    assert store.reconcile(is_alive=lambda token: False) == []
    assert store.get(mine.id).status == "pending"


# -- store failures -------------------------------------------------------------------------


def test_store_errors_are_governance_errors() -> None:
    for error in (ApprovalNotFound, ApprovalConflict, SelfApprovalError, ApprovalStoreError):
        assert issubclass(error, ApprovalError)
    assert issubclass(ApprovalError, GovernanceError)


def test_a_store_that_cannot_be_opened_raises_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(ApprovalStoreError, match="cannot open"):
        ApprovalStore(tmp_path / "missing-dir" / "approvals.db")
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ApprovalStoreError, match="cannot open"):
        ApprovalStore(garbage)


def test_a_closed_store_raises_a_store_error(backend: Backend) -> None:
    store = backend.open(ApprovalStore)
    held = _hold(store)
    store.close()
    store.close()
    for call in (
        lambda: store.get(held.id),
        lambda: store.list(),
        lambda: _hold(store),
        lambda: store.approve(held.id, "bob"),
        lambda: store.expire_due(),
        lambda: store.consume(held.id),
        lambda: store.wait(held.id, timeout=0),
    ):
        with pytest.raises(ApprovalStoreError, match="closed"):
            call()


def test_a_locked_database_raises_a_store_error_and_records_nothing(
    tmp_path: Path, clock: ManualClock
) -> None:
    path = tmp_path / "a.db"
    with ApprovalStore(path, clock=clock, busy_timeout=0.05) as store:
        held = _hold(store)
        blocker = sqlite3.connect(path, isolation_level=None)
        try:
            blocker.execute("BEGIN IMMEDIATE")
            with pytest.raises(ApprovalStoreError, match="locked"):
                _hold(store)
            with pytest.raises(ApprovalStoreError, match="locked"):
                store.approve(held.id, "bob")
            with pytest.raises(ApprovalStoreError, match="locked"):
                store.consume(held.id)
            blocker.execute("ROLLBACK")
        finally:
            blocker.close()
        assert [r.status for r in store.list()] == ["pending"]
        assert _hold(store).id == "apr-2"


def test_a_corrupted_row_raises_a_store_error_instead_of_a_wrong_request(
    tmp_path: Path, clock: ManualClock
) -> None:
    path = tmp_path / "a.db"
    with ApprovalStore(path, clock=clock) as store:
        held = _hold(store)
        raw = sqlite3.connect(path, isolation_level=None)
        try:
            raw.execute("UPDATE approvals SET arguments = 'not json' WHERE id = ?", (held.id,))
        finally:
            raw.close()
        with pytest.raises(ApprovalStoreError, match="malformed"):
            store.get(held.id)
        with pytest.raises(ApprovalStoreError, match="malformed"):
            store.list()


def test_the_schema_refuses_a_consumed_request_that_is_not_approved(
    tmp_path: Path, clock: ManualClock
) -> None:
    path = tmp_path / "a.db"
    with ApprovalStore(path, clock=clock) as store:
        held = _hold(store)
    raw = sqlite3.connect(path, isolation_level=None)
    try:
        with pytest.raises(sqlite3.IntegrityError):
            raw.execute("UPDATE approvals SET consumed = 1 WHERE id = ?", (held.id,))
        with pytest.raises(sqlite3.IntegrityError):
            raw.execute("UPDATE approvals SET status = 'APPROVED' WHERE id = ?", (held.id,))
    finally:
        raw.close()
