"""Durability modes and the store URL: one commit before a tool runs in `fsync` mode, the
pragmas each mode sets, and backends that record the same chain."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from governance import ManualClock, Principal, ToolCall
from governance._firewall import LifecycleEvent
from governance._gateway import Gateway
from governance.stores._approvals import ApprovalStore
from governance.stores._backends import StoreSpec, StoreUrlError, parse_store_url
from tests.conftest import SHIPPED_POLICY

ANN = Principal("ann", "agent", "ops")
LOOKUP = ToolCall("c1", "orders.lookup", {"order_id": "ORD-0001"}, "run-1", ANN)


def _connections(gateway: Gateway) -> list[sqlite3.Connection]:
    conns = [gateway.audit._conn, gateway.approvals._conn, gateway.budgets._conn]  # type: ignore[attr-defined]
    assert all(isinstance(conn, sqlite3.Connection) for conn in conns)
    return conns


class CommitCounter:
    """Counts commits on instrumented connections: an explicit COMMIT, or a write statement
    run in autocommit mode (each is one commit, so one fsync with synchronous=FULL)."""

    def __init__(self, conns: list[sqlite3.Connection]) -> None:
        self.commits: list[str] = []
        for conn in conns:
            conn.set_trace_callback(self._watch(conn))

    def _watch(self, conn: sqlite3.Connection):  # type: ignore[no-untyped-def]
        def trace(statement: str) -> None:
            word = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else ""
            if word == "COMMIT" or (
                word in ("INSERT", "UPDATE", "DELETE", "REPLACE") and not conn.in_transaction
            ):
                self.commits.append(statement)

        return trace


@pytest.fixture
def durable(tmp_path: Path, clock: ManualClock) -> Iterator[Gateway]:
    with Gateway(
        state_dir=tmp_path / "state", policy_path=SHIPPED_POLICY, clock=clock, durability="fsync"
    ) as gateway:
        yield gateway


def test_fsync_mode_commits_exactly_once_before_the_tool_runs_and_once_after(
    durable: Gateway,
) -> None:
    conns = _connections(durable)
    assert {conn.execute("PRAGMA synchronous").fetchone()[0] for conn in conns} == {2}  # FULL
    counter = CommitCounter(conns)
    before_tool: list[int] = []

    def at_start(event: LifecycleEvent) -> None:
        if event.kind == "execution.started":  # the last thing before source.call
            before_tool.append(len(counter.commits))

    durable.firewall.add_observer(at_start)
    result = durable.firewall.call(LOOKUP)
    assert result.outcome == "executed", result.error
    assert before_tool == [1], counter.commits
    assert len(counter.commits) == 2
    kinds = [event.kind for event in durable.audit.events("run-1")]
    assert kinds == ["tool.requested", "policy.decided", "execution.started", "execution.completed"]


def test_a_refused_call_writes_its_records_in_one_commit_and_executes_nothing(
    durable: Gateway,
) -> None:
    counter = CommitCounter(_connections(durable))
    result = durable.firewall.call(replace_tool(LOOKUP, "fs.delete", {"path": "secrets/x"}))
    assert result.outcome == "blocked"
    assert len(counter.commits) == 1
    kinds = [event.kind for event in durable.audit.events("run-1")]
    assert kinds == ["tool.requested", "policy.decided"]


def replace_tool(call: ToolCall, tool: str, arguments: dict[str, object]) -> ToolCall:
    return ToolCall(call.call_id, tool, arguments, call.run_id, call.principal)


@pytest.mark.parametrize(("mode", "level"), [("fsync", 2), ("os", 1)])
def test_each_durability_mode_sets_wal_and_its_sync_level_on_every_store(
    tmp_path: Path, mode: str, level: int
) -> None:
    with Gateway(
        state_dir=tmp_path,
        policy_path=SHIPPED_POLICY,
        store=f"sqlite:///{tmp_path}/db?durability={mode}",
    ) as gateway:
        for conn in _connections(gateway):
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert conn.execute("PRAGMA synchronous").fetchone()[0] == level
    assert sorted(p.name for p in (tmp_path / "db").glob("*.sqlite")) == [
        "approvals.sqlite", "audit.sqlite", "budgets.sqlite",
    ]  # fmt: skip


def test_the_memory_store_writes_nothing_to_disk(tmp_path: Path, clock: ManualClock) -> None:
    state = tmp_path / "state"
    with Gateway(state_dir=state, policy_path=SHIPPED_POLICY, clock=clock, store="memory:") as gw:
        assert gw.firewall.call(LOOKUP).outcome == "executed"
        assert gw.audit.verify("run-1").ok
    # The tools' own workspace (business database) is theirs; no store file exists anywhere.
    stores = ("audit", "approvals", "budgets")
    assert not [p for p in tmp_path.rglob("*") if p.name.split(".")[0] in stores]
    assert not list(state.glob("*.sqlite*"))


def test_only_a_gateway_on_existing_stores_reconciles_them(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    swept: list[str] = []

    def sweep(self: ApprovalStore, **_: object) -> list[str]:
        swept.append(str(self.path))
        return []

    monkeypatch.setattr(ApprovalStore, "reconcile", sweep)
    monkeypatch.setattr(ApprovalStore, "in_flight", sweep)
    with Gateway(
        state_dir=tmp_path / "m", policy_path=SHIPPED_POLICY, clock=clock, store="memory:"
    ) as gateway:
        assert (gateway.reconciled, gateway.in_doubt) == ([], [])
    assert swept == [], "memory stores are created empty, for this gateway alone"
    with Gateway(state_dir=tmp_path / "f", policy_path=SHIPPED_POLICY, clock=clock):
        pass
    assert len(swept) == 2, "a file store may hold what a dead process left: swept"


@pytest.mark.parametrize("store", ["sqlite", "memory:"])
def test_every_backend_records_the_same_chain_for_the_same_calls(
    tmp_path: Path, store: str
) -> None:
    chains = []
    for where, chosen in (("a", "sqlite"), ("b", store)):
        clock = ManualClock()
        with Gateway(
            state_dir=tmp_path / where,
            policy_path=SHIPPED_POLICY,
            clock=clock,
            store=chosen,
            audit_key_from_env=False,
        ) as gw:
            gw.firewall.call(LOOKUP)
            gw.firewall.call(replace_tool(LOOKUP, "fs.delete", {"path": "notes/todo.txt"}))
            chains.append([(e.seq, e.kind, e.ts, e.data, e.hash) for e in gw.audit.events("run-1")])
    assert chains[0] == chains[1]
    assert len(chains[0]) >= 6


@pytest.mark.parametrize(
    ("url", "spec"),
    [
        ("sqlite", StoreSpec("sqlite")),
        ("memory:", StoreSpec("memory")),
        ("ephemeral", StoreSpec("memory")),
        ("sqlite:///var/lib/proctor", StoreSpec("sqlite", Path("/var/lib/proctor"))),
        ("sqlite:///srv/p?durability=os", StoreSpec("sqlite", Path("/srv/p"), "os")),
    ],
)
def test_store_urls_name_their_backend(url: str, spec: StoreSpec) -> None:
    assert parse_store_url(url) == spec


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "empty"),
        ("mysql://h/db", "not understood"),
        ("sqlite://relative/dir", "not understood"),
        ("sqlite:///x?durability=never", "unknown durability"),
        ("sqlite:///x?sync=off", "unknown option"),
        ("mysql://u:hunter2@db/p", "not understood"),
    ],
)
def test_a_store_url_that_names_no_backend_is_refused_with_the_fix(url: str, message: str) -> None:
    with pytest.raises(StoreUrlError, match=message) as caught:
        parse_store_url(url)
    assert "hunter2" not in str(caught.value)


def test_a_bad_durability_refuses_to_start_before_anything_is_created(tmp_path: Path) -> None:
    with pytest.raises(StoreUrlError, match="durability"):
        Gateway(state_dir=tmp_path / "s", policy_path=SHIPPED_POLICY, durability="never")  # type: ignore[arg-type]
    with pytest.raises(StoreUrlError, match="memory store has none"):
        Gateway(
            state_dir=tmp_path / "s", policy_path=SHIPPED_POLICY, store="memory:", durability="os"
        )
    assert not (tmp_path / "s").exists()
