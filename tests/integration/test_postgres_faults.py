"""The PostgreSQL stores under real server faults: the server is SIGKILLed (or unreachable)
exactly as a firewall write goes out, between the steps of a held call, and at random under
load from several threads. Nothing executes without its write-ahead record on the chain,
destructive calls never fail open, and the same store objects work again once the server is
back: the chain verifies, with no gap in `seq`.

The firewall here is the real one over the built-in tools (real side effects in a workspace),
with the Postgres audit log and approval store and an in-memory budget ledger.
"""

from __future__ import annotations

import contextlib
import itertools
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from governance import ManualClock, Principal, ToolCall
from governance._firewall import Firewall, StaticPolicy
from governance.core._errors import AuditWriteError, GovernanceError
from governance.policy._load import parse_policy
from governance.stores._approvals import ApprovalStoreError
from governance.stores._approvals_postgres import PostgresApprovalStore
from governance.stores._audit_postgres import PostgresAuditLog
from governance.stores._budgets_memory import MemoryBudgetLedger
from governance.stores._postgres import PostgresTarget
from governance.tools import builtin_tools, file_tree, outbox_rows, tickets
from governance.tools._registry import ToolRegistry
from tests.postgres_cluster import PostgresCluster
from tests.store_backends import migrated_template

__all__ = ["migrated_template"]

pytestmark = pytest.mark.slow

POLICY = """
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - {id: read, effect: allow, match: {tool: orders.lookup}}
  - {id: write, effect: allow, match: {tool: tickets.create}}
  - id: destroy
    effect: allow
    match: {tool: fs.delete}
    when: [{arg: path, path_prefix: notes/}]
  - {id: hold-destructive, effect: require_approval, match: {tool: email.send}}
"""
KEY = b"audit-key"
ANN = Principal("ann", "bot", "ops")
_ids = itertools.count(1)


def _call(kind: str, run_id: str = "run-1") -> ToolCall:
    call_id = f"c{next(_ids)}"
    arguments: dict[str, Any] = {
        "read": {"order_id": "ORD-0001"},
        "write": {"title": call_id, "body": "b"},
        "destructive": {"path": "notes/todo.txt"},
        "held destructive": {"to": "a@b.co", "subject": call_id, "body": "b"},
    }[kind]
    tool = {
        "read": "orders.lookup",
        "write": "tickets.create",
        "destructive": "fs.delete",
        "held destructive": "email.send",
    }[kind]
    return ToolCall(call_id, tool, arguments, run_id, ANN)


class KillBefore:
    """A store that kills the server just before the first call of its `methods` that
    `matches` goes out: the store then meets a real dead server at exactly that point."""

    def __init__(
        self,
        inner: Any,
        cluster: PostgresCluster,
        *methods: str,
        matches: Callable[..., bool] = lambda *args, **kwargs: True,
    ) -> None:
        self._inner, self._cluster, self._methods = inner, cluster, methods
        self._matches, self.killed = matches, False

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if name not in self._methods:
            return attribute

        def killing(*args: Any, **kwargs: Any) -> Any:
            if not self.killed and self._matches(*args, **kwargs):
                self.killed = True
                self._cluster.kill()
            return attribute(*args, **kwargs)

        return killing


def writing(kind: str) -> Callable[..., bool]:
    """Matches an audit `append(run, kind, data)` or `append_many(run, events)` of `kind`."""

    def matches(run_id: str, *rest: Any) -> bool:
        if len(rest) == 2:
            return bool(rest[0] == kind)
        return any(each == kind for each, _ in rest[0])

    return matches


class Setup:
    """A firewall over the built-in tools with the Postgres audit log and approval store."""

    def __init__(self, url: str, workspace: Path, cluster: PostgresCluster) -> None:
        self.url, self.workspace, self.cluster = url, workspace, cluster
        self.clock = ManualClock()
        self.audit = PostgresAuditLog(PostgresTarget(url), key=KEY, clock=self.clock)
        self.approvals = PostgresApprovalStore(PostgresTarget(url), clock=self.clock)
        self.tools = builtin_tools(workspace)

    def firewall(self, audit: Any = None, approvals: Any = None) -> Firewall:
        return Firewall(
            ToolRegistry([self.tools]),
            StaticPolicy(parse_policy(POLICY)),
            audit or self.audit,
            approvals=approvals or self.approvals,
            budgets=MemoryBudgetLedger(clock=self.clock),
        )

    def effects(self) -> tuple[list[str], bool, list[str]]:
        """Every side effect the tools can leave: tickets, the file, sent mail."""
        return (
            [row["title"] for row in tickets(self.workspace)],
            "notes/todo.txt" in file_tree(self.workspace),
            [row["subject"] for row in outbox_rows(self.workspace)],
        )

    def kinds(self, call: ToolCall) -> list[str]:
        events = self.audit.events(call.run_id)
        return [e.kind for e in events if e.data.get("call_id") == call.call_id]

    def assert_chains_whole(self) -> None:
        verdicts = self.audit.verify_all()
        assert verdicts and all(v.ok for v in verdicts), [v for v in verdicts if not v.ok]
        for verdict in verdicts:
            seqs = [e.seq for e in self.audit.events(verdict.run_id)]
            assert seqs == list(range(1, len(seqs) + 1))

    def close(self) -> None:
        self.audit.close()
        self.approvals.close()


def _approved(setup: Setup) -> tuple[ToolCall, str]:
    """A held destructive call (an email), approved by a second person."""
    call = _call("held destructive")
    approval_id = setup.firewall().call(call).approval_id
    assert approval_id is not None
    setup.firewall().approve(approval_id, "bob")
    return call, approval_id


@pytest.fixture
def cluster(postgres_cluster: PostgresCluster) -> Iterator[PostgresCluster]:
    """The session's server, running again after the test whatever the test did to it."""
    yield postgres_cluster
    if not postgres_cluster._accepting():
        postgres_cluster.start()


@pytest.fixture
def setup(cluster: PostgresCluster, migrated_template: str, tmp_path: Path) -> Iterator[Setup]:
    made = Setup(cluster.create_database(template=migrated_template), tmp_path / "ws", cluster)
    yield made
    if not cluster._accepting():
        cluster.start()
    made.close()


@pytest.mark.parametrize("kind", ["read", "write", "destructive", "held destructive"])
def test_a_server_killed_as_the_write_ahead_record_goes_out_executes_nothing_then_recovers(
    setup: Setup, kind: str
) -> None:
    setup.firewall().call(_call("read"))  # the log now remembers the run's tail: fast path
    before = setup.effects()
    audit = KillBefore(setup.audit, setup.cluster, "append", "append_many")
    call = _call(kind)
    result = setup.firewall(audit=audit).call(call)
    assert audit.killed
    assert (result.outcome, result.reason) == ("failed", "audit_unavailable")
    assert setup.effects() == before, "nothing executed without its write-ahead record"
    setup.cluster.start()
    assert setup.kinds(call) == [], "the refused call left nothing on the chain"
    assert setup.approvals.list() == []
    again = setup.firewall().call(_call(kind))
    assert again.outcome == ("held" if kind.startswith("held") else "executed")
    setup.assert_chains_whole()


def test_a_server_killed_as_a_held_call_is_parked_parks_and_executes_nothing(
    setup: Setup,
) -> None:
    approvals = KillBefore(setup.approvals, setup.cluster, "create")
    call = _call("held destructive")
    result = setup.firewall(approvals=approvals).call(call)
    # The request could not be parked, nor its refusal recorded: the audit failure is reported.
    assert (result.outcome, result.reason) == ("failed", "audit_unavailable")
    assert result.approval_id is None
    setup.cluster.start()
    assert setup.approvals.list() == []
    assert setup.effects()[2] == []
    assert "execution.started" not in setup.kinds(call)
    setup.assert_chains_whole()


def test_a_server_killed_as_an_approval_is_consumed_executes_it_once_after_the_restart(
    setup: Setup,
) -> None:
    call, approval_id = _approved(setup)
    killing = setup.firewall(approvals=KillBefore(setup.approvals, setup.cluster, "consume"))
    first = killing.resume_held(approval_id, call)
    assert (first.outcome, first.reason) == ("blocked", "approval_store_unavailable")
    assert setup.effects()[2] == []
    setup.cluster.start()
    # The consume never reached the server: the approval is still unused, and used once now.
    assert setup.approvals.get(approval_id).consumed is False
    second = setup.firewall().resume_held(approval_id, call)
    third = setup.firewall().resume_held(approval_id, call)
    assert second.outcome == "executed"
    assert (third.outcome, third.reason) == ("blocked", "approval_already_used")
    assert setup.effects()[2] == [call.arguments["subject"]]
    setup.assert_chains_whole()


def test_a_server_killed_after_the_consume_landed_never_executes_the_approval(
    setup: Setup,
) -> None:
    call, approval_id = _approved(setup)
    # The consume lands; the server dies as its audit record (approval.consumed and
    # execution.started, one batch) goes out: the effect must not happen, now or later.
    audit = KillBefore(
        setup.audit, setup.cluster, "append", "append_many", matches=writing("approval.consumed")
    )
    killing = setup.firewall(audit=audit)
    first = killing.resume_held(approval_id, call)
    assert audit.killed
    assert (first.outcome, first.reason) == ("failed", "audit_unavailable")
    setup.cluster.start()
    assert setup.approvals.get(approval_id).consumed is True
    again = setup.firewall().resume_held(approval_id, call)
    assert (again.outcome, again.reason) == ("blocked", "approval_already_used")
    assert setup.effects()[2] == [], "a destructive call never fails open"
    assert "execution.started" not in setup.kinds(call)
    setup.assert_chains_whole()


def test_while_the_server_is_down_every_store_call_fails_as_the_store_error(
    setup: Setup,
) -> None:
    approved, approved_id = _approved(setup)
    call = _call("held destructive")
    approval_id = setup.firewall().call(call).approval_id
    assert approval_id is not None
    setup.cluster.kill()
    resumed = setup.firewall().resume_held(approved_id, approved)
    assert (resumed.outcome, resumed.reason) == ("blocked", "approval_store_unavailable")
    assert setup.effects()[2] == []
    store = setup.approvals
    attempts: list[Callable[[], Any]] = [
        lambda: store.get(approval_id),
        lambda: store.list(),
        lambda: store.approve(approval_id, "bob"),
        lambda: store.reject(approval_id, "bob", comment="no"),
        lambda: store.consume(approval_id),
        lambda: store.expire_due(),
        lambda: store.wait(approval_id, timeout=0.1),
        lambda: store.in_flight(),
    ]
    for attempt in attempts:
        with pytest.raises(ApprovalStoreError, match="could not"):
            attempt()
    with pytest.raises(AuditWriteError, match="could not write"):
        setup.audit.append("run-1", "step", {"n": 1})
    for read in (lambda: setup.audit.events("run-1"), setup.audit.verify_all):
        with pytest.raises(GovernanceError, match="could not read"):
            read()
    setup.cluster.start()
    assert store.get(approval_id).status == "pending", "nothing was decided while it was down"
    assert store.get(approved_id).consumed is False
    setup.assert_chains_whole()


def test_an_unreachable_server_refuses_to_open_either_store_without_showing_its_password(
    cluster: PostgresCluster,
) -> None:
    url = f"postgresql://proctor:s3cret-pw@127.0.0.1:{cluster.port}/x"
    cluster.stop()
    try:
        for opening, error in (
            (lambda: PostgresAuditLog(PostgresTarget(url)), AuditWriteError),
            (lambda: PostgresApprovalStore(PostgresTarget(url)), ApprovalStoreError),
        ):
            with pytest.raises(error) as caught:
                opening()
            assert "s3cret-pw" not in str(caught.value)
            assert f"127.0.0.1:{cluster.port}/x" in str(caught.value)
    finally:
        cluster.start()


CHAOS_WRITERS = 4
CHAOS_REVIEWERS = 2
CHAOS_KILLS = 3


def test_chaos_calls_from_threads_while_the_server_is_killed_and_restarted(
    setup: Setup,
) -> None:
    """Writers call a tool, reviewers hold, approve and resume destructive calls, all until
    the server has been killed and restarted three times. Every side effect belongs to a call
    whose write-ahead events are on the chain, no approval executes twice, a call reported
    executed did execute, and the chains verify without a gap after the last restart."""
    firewall = setup.firewall()
    results: list[tuple[ToolCall, Any]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    done = threading.Event()

    def keep(call: ToolCall, got: Any) -> Any:
        with lock:
            results.append((call, got))
        return got

    def writer(index: int) -> None:
        try:
            while not done.is_set():
                call = _call("write", run_id=f"run-{index % 3}")
                keep(call, firewall.call(call))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    def reviewer(index: int) -> None:
        try:
            while not done.is_set():
                call = _call("held destructive", run_id=f"run-held-{index}")
                approval_id = keep(call, firewall.call(call)).approval_id
                if approval_id is None:
                    continue
                with contextlib.suppress(GovernanceError):
                    firewall.approve(approval_id, "bob")
                for _ in range(3):  # a resume the outage refused is tried again
                    got = keep(call, firewall.resume_held(approval_id, call))
                    if got.outcome == "executed" or got.reason != "approval_store_unavailable":
                        break
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    def killer() -> None:
        chance = random.Random(7)
        try:
            for _ in range(CHAOS_KILLS):
                time.sleep(chance.uniform(0.1, 0.3))
                setup.cluster.kill()
                time.sleep(chance.uniform(0.05, 0.2))
                setup.cluster.start()
            time.sleep(0.2)  # calls after the last restart
        finally:
            done.set()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(CHAOS_WRITERS)]
    threads += [threading.Thread(target=reviewer, args=(i,)) for i in range(CHAOS_REVIEWERS)]
    chaos = threading.Thread(target=killer)
    for thread in [*threads, chaos]:
        thread.start()
    for thread in [chaos, *threads]:
        thread.join(timeout=300)
    assert not any(t.is_alive() for t in [*threads, chaos]) and errors == []
    reasons = {(got.outcome, got.reason) for _, got in results}
    assert ("executed", None) in reasons and ("failed", "audit_unavailable") in reasons
    by_id = {call.call_id: call for call, _ in results}
    created, _, sent = setup.effects()
    assert len(sent) == len(set(sent)), "an approval executed twice"
    for call_id in [*created, *sent]:
        kinds = setup.kinds(by_id[call_id])
        assert "execution.started" in kinds, (call_id, kinds)
        assert kinds.index("tool.requested") < kinds.index("execution.started")
        if call_id in sent:  # a held call: consumed, on the chain, before it ran
            assert kinds.index("approval.consumed") < kinds.index("execution.started")
    for call, got in results:
        if got.outcome == "executed":
            assert call.call_id in created or call.call_id in sent
    assert any(got.outcome == "executed" for call, got in results if call.tool == "email.send")
    setup.assert_chains_whole()


def test_a_server_killed_mid_verification_is_a_read_error_never_a_verdict(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    import governance.stores._audit_postgres as on_server

    for start in range(0, 2000, 100):
        setup.audit.append_many("run-1", [("step", {"n": n}) for n in range(start, start + 100)])
    monkeypatch.setattr(on_server, "_FETCH_ROWS", 10)
    prefetched = on_server._prefetched

    def killed_after_the_first_rows(cursor: Any) -> Iterator[Any]:
        rows = prefetched(cursor)
        try:
            for index, row in enumerate(rows):
                if index == 25:
                    setup.cluster.kill()
                yield row
        finally:
            rows.close()

    monkeypatch.setattr(on_server, "_prefetched", killed_after_the_first_rows)
    with pytest.raises(GovernanceError, match="could not read"):
        setup.audit.verify_all()
    with pytest.raises(GovernanceError, match="could not read"):
        setup.audit.verify("run-1")
    monkeypatch.setattr(on_server, "_prefetched", prefetched)
    setup.cluster.start()
    verdict = setup.audit.verify("run-1")
    assert (verdict.ok, verdict.events) == (True, 2000)
