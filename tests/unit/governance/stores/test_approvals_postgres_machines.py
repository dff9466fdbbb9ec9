"""Gateways on several machines share one PostgreSQL approval store: a process token means
something only on its own machine, so start-up reconciliation never expires or settles a
request another machine's live process is waiting on or writing."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

import governance.stores._approvals_postgres as on_server
from governance.core._contracts import Principal
from governance.core._process_token import current_process_token
from governance.stores._approvals_postgres import PostgresApprovalStore
from governance.stores._postgres import PostgresTarget

ALICE = Principal(actor="alice", agent="ops-agent", team="platform")
DEAD = "999999:1"  # no such process on any machine the tests run on


def _hold(store: PostgresApprovalStore, call_id: str, waiter: str) -> str:
    return store.create(
        run_id="run-1",
        call_id=call_id,
        tool="fs.delete",
        arguments={"path": "notes/a.txt"},
        arguments_digest="sha256:" + "a" * 64,
        principal=ALICE,
        policy_digest="sha256:" + "p" * 64,
        rule_ids=("approve-deletes",),
        reason="rule:approve-deletes",
        risk="high",
        waiter=waiter,
        awaiting="approval.required",
    ).id


@pytest.fixture
def url(postgres_cluster: Any, migrated_template: str) -> str:
    return str(postgres_cluster.create_database(template=migrated_template))


@pytest.fixture
def open_on(url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Opens the store as a gateway on `machine` would (None: this machine)."""
    opened: list[PostgresApprovalStore] = []
    real = on_server.this_machine

    def open_on(machine: str | None = None) -> PostgresApprovalStore:
        monkeypatch.setattr(on_server, "this_machine", lambda: machine or real())
        opened.append(PostgresApprovalStore(PostgresTarget(url)))
        return opened[-1]

    yield open_on
    for store in opened:
        store.close()


def test_start_up_on_one_machine_leaves_another_machines_waiters_alone(open_on: Any) -> None:
    here, there = open_on(), open_on("another-host/boot-1")
    mine = _hold(here, "c1", DEAD)
    theirs = _hold(there, "c2", DEAD)
    same_token_there = _hold(there, "c3", current_process_token())
    here.recorded(mine, "approval.required")
    there.recorded(theirs, "approval.required")
    there.recorded(same_token_there, "approval.required")
    assert here.reconcile(is_alive=lambda token: False) == [mine]
    assert [here.get(rid).status for rid in (theirs, same_token_there)] == ["pending"] * 2
    # On its own machine, that token is the process asking: alive.
    assert there.reconcile(is_alive=lambda token: False) == [theirs]


def test_start_up_settles_only_this_machines_dead_writers(
    open_on: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    here, there = open_on(), open_on("another-host/boot-1")
    monkeypatch.setattr(on_server, "current_process_token", lambda: DEAD)  # writers that died
    _hold(here, "c1", DEAD)
    _hold(there, "c2", DEAD)
    monkeypatch.undo()
    assert [r.call_id for r in here.in_flight(is_alive=lambda token: False)] == ["c1"]
    assert [r.call_id for r in there.in_flight(is_alive=lambda token: False)] == ["c2"]


def test_a_waiter_from_before_this_hosts_last_boot_is_dead_whatever_its_pid(
    open_on: Any,
) -> None:
    before_reboot = open_on(f"{socket.gethostname()}/an-earlier-boot")
    rid = _hold(before_reboot, "c1", current_process_token())
    before_reboot.recorded(rid, "approval.required")
    here = open_on()
    assert here.reconcile(is_alive=lambda token: True) == [rid]
    assert here.get(rid).status_reason == "process restarted"


def test_a_request_shows_its_waiters_token_without_the_machine(open_on: Any) -> None:
    store = open_on("another-host/boot-1")
    rid = _hold(store, "c1", "1234:5678")
    assert store.get(rid).waiter == "1234:5678"
    with pytest.raises(ValueError, match="waiter"):
        _hold(store, "c2", "")
