"""A process forked while a PostgreSQL store is open (a pre-fork worker model, a daemon that
forks and lets its parent exit) never speaks on its parent's connection, never ends its
parent's lease and, for the approval store, is a gateway of its own with its own lease kept
alive by its own heartbeat. Real forks: the child does the work, reports through a pipe and
leaves with os._exit (it never runs the test session's teardown)."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import governance.stores._approvals_postgres as on_server
from governance.core._process_token import current_process_token
from governance.stores._approvals_postgres import PostgresApprovalStore
from governance.stores._audit_postgres import PostgresAuditLog
from governance.stores._budgets_postgres import PostgresBudgetLedger
from governance.stores._postgres import PostgresTarget
from tests.held_deletes import hold_delete

CHILD_DEADLINE_SECONDS = 30  # a child that hangs (a lock inherited held) is killed by alarm

Opener = Callable[[PostgresTarget], Any]
STORES: dict[str, Opener] = {
    "approvals": lambda target: PostgresApprovalStore(target),
    "budgets": lambda target: PostgresBudgetLedger(target),
    "audit": lambda target: PostgresAuditLog(target, key=b"k"),
}


@pytest.fixture
def target(postgres_cluster: Any, migrated_template: str) -> PostgresTarget:
    return PostgresTarget(str(postgres_cluster.create_database(template=migrated_template)))


@pytest.fixture
def opened(target: PostgresTarget) -> Iterator[Callable[[Opener], Any]]:
    stores: list[Any] = []

    def open_with(opener: Opener) -> Any:
        stores.append(opener(target))
        return stores[-1]

    yield open_with
    for store in stores:
        store.close()


def _in_child(work: Callable[[], dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    """Run `work` in a forked child; its exit code and the JSON it reported."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(read_end)
            signal.alarm(CHILD_DEADLINE_SECONDS)
            report = work()
            os.write(write_end, json.dumps(report).encode())
            code = 0
        except BaseException as exc:
            os.write(write_end, json.dumps({"error": repr(exc)}).encode())
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        raw = pipe.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), json.loads(raw or b"{}")


def _backend(store: Any) -> int:
    """The server process serving this store's connection."""
    with store._session("name its server process") as conn:
        return int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])


def _lease_until(store: PostgresApprovalStore, instance: str) -> Any:
    with store._session("read a lease") as conn:
        row = conn.execute(
            "SELECT lease_until FROM proctor_instances WHERE instance_id = ?", (instance,)
        ).fetchone()
    return None if row is None else row[0]


@pytest.mark.parametrize("kind", sorted(STORES))
def test_a_forked_child_works_on_its_own_connection_and_its_close_leaves_the_parents_alone(
    opened: Callable[[Opener], Any], kind: str
) -> None:
    store = opened(STORES[kind])
    parents = _backend(store)

    def child() -> dict[str, Any]:
        mine = _backend(store)
        store.close()
        return {"backend": mine}

    code, report = _in_child(child)
    assert code == 0, report
    assert report["backend"] != parents  # never the parent's server session
    assert _backend(store) == parents  # the parent's session was not ended, nor reopened


@pytest.mark.parametrize("kind", sorted(STORES))
def test_a_child_forked_while_a_parent_thread_held_the_store_lock_can_use_the_store(
    opened: Callable[[Opener], Any], kind: str
) -> None:
    store = opened(STORES[kind])
    parents = _backend(store)
    with store._lock:  # as a parent thread mid-call would hold it at the fork
        code, report = _in_child(lambda: {"backend": _backend(store)})
    assert code == 0, report
    assert report["backend"] != parents


def test_a_forked_child_closing_the_approval_store_leaves_the_parents_lease_and_waiters(
    opened: Callable[[Opener], Any],
) -> None:
    parent = opened(STORES["approvals"])
    other_gateway = opened(STORES["approvals"])
    held = hold_delete(parent, "c1", current_process_token(), awaiting="approval.required")
    parent.recorded(held, "approval.required")

    def child() -> dict[str, Any]:
        parent.close()
        return {}

    code, report = _in_child(child)
    assert code == 0, report
    assert other_gateway._lease_alive(parent._instance)
    assert other_gateway.reconcile(is_alive=lambda token: False) == []
    assert parent.get(held).status == "pending"


def test_a_forked_child_is_a_gateway_of_its_own_with_its_own_lease(
    opened: Callable[[Opener], Any],
) -> None:
    parent = opened(STORES["approvals"])
    parents_instance = parent._instance

    def child() -> dict[str, Any]:
        held = hold_delete(parent, "c-child", current_process_token(), awaiting="approval.required")
        return {"instance": parent._instance, "held": held}

    code, report = _in_child(child)
    assert code == 0, report
    assert report["instance"] != parents_instance
    # The child's lease row exists (it lapses on its own: nobody renews it any more).
    assert _lease_until(parent, report["instance"]) is not None
    assert parent.get(report["held"]).status == "pending"
    assert _lease_until(parent, parents_instance) is not None


def test_a_daemonised_child_keeps_its_own_lease_renewed_after_its_parent_went_away(
    opened: Callable[[Opener], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """open, fork, the parent goes away: the child's waiters live on under its own lease."""
    daemon_parent = opened(STORES["approvals"])
    other_gateway = opened(STORES["approvals"])
    monkeypatch.setattr(on_server, "RENEW_SECONDS", 0.05)  # renewals seen within the test
    go_read, go_write = os.pipe()
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the daemon
        code = 1
        try:
            signal.alarm(CHILD_DEADLINE_SECONDS)
            held = hold_delete(
                daemon_parent, "c-daemon", current_process_token(), awaiting="approval.required"
            )
            mine = daemon_parent._instance
            first = _lease_until(daemon_parent, mine)
            while _lease_until(daemon_parent, mine) == first:  # its heartbeat renews it
                time.sleep(0.05)
            os.write(ready_write, json.dumps({"held": held, "instance": mine}).encode())
            os.read(go_read, 1)  # stays alive, waiting, until the parent side has looked
            code = 0
        finally:
            os._exit(code)
    try:
        report = json.loads(os.read(ready_read, 4096))
        daemon_parent.close()  # the parent leaves
        assert report["instance"] != daemon_parent._instance
        assert other_gateway._lease_alive(report["instance"])
        assert other_gateway.reconcile(is_alive=lambda token: False) == []
        assert other_gateway.get(report["held"]).status == "pending"
    finally:
        os.write(go_write, b"x")
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
