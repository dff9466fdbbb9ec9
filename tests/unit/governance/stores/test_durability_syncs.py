"""Durability modes counted at the disk: the syncs SQLite really asks for around one call.

Counted with a VFS shim (tests/sqlite_syncs.py) rather than by reading statements, so a
checkpoint, a journal or a second store that syncs before the tool runs is counted too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from governance import ManualClock, Principal, ToolCall
from governance._firewall import LifecycleEvent
from governance._gateway import Gateway
from tests.conftest import SHIPPED_POLICY
from tests.sqlite_syncs import SyncLog, available, counting_syncs

pytestmark = pytest.mark.skipif(
    not available(), reason="the sqlite3 module does not share a libsqlite3 this test can shim"
)

ANN = Principal("ann", "agent", "ops")


def _call(n: int, tool: str = "orders.lookup") -> ToolCall:
    arguments = {"order_id": "ORD-0001"} if tool == "orders.lookup" else {"path": "notes/x"}
    return ToolCall(f"c{n}", tool, arguments, "run-1", ANN)


@pytest.fixture
def counted(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Gateway, SyncLog]]:
    with counting_syncs() as log, Gateway(
        state_dir=tmp_path / "state",
        policy_path=SHIPPED_POLICY,
        clock=ManualClock(),
        durability=request.param,
    ) as gateway:
        # A first call creates the WAL files (their first sync also syncs the directory).
        assert gateway.firewall.call(_call(0)).outcome == "executed"
        yield gateway, log


def _syncs_around(gateway: Gateway, log: SyncLog, call: ToolCall) -> tuple[list[str], list[str]]:
    """(syncs before the tool ran, syncs after it), for one call."""
    start = len(log.syncs)
    at_start: list[int] = []

    def watch(event: LifecycleEvent) -> None:
        if event.kind == "execution.started" and event.call_id == call.call_id:
            at_start.append(len(log.syncs))  # observers run after the write, before the tool

    gateway.firewall.add_observer(watch)
    gateway.firewall.call(call)
    split = at_start[0] if at_start else len(log.syncs)
    return log.syncs[start:split], log.syncs[split:]


def _names(syncs: list[str]) -> list[str]:
    return [Path(name).name for name in syncs]


@pytest.mark.parametrize("counted", ["fsync"], indirect=True)
def test_fsync_mode_syncs_the_disk_exactly_once_before_a_tool_runs_and_once_after(
    counted: tuple[Gateway, SyncLog],
) -> None:
    gateway, log = counted
    for n in range(1, 4):
        before, after = _syncs_around(gateway, log, _call(n))
        assert _names(before) == ["audit.sqlite-wal"]
        assert _names(after) == ["audit.sqlite-wal"]


@pytest.mark.parametrize("counted", ["fsync"], indirect=True)
def test_a_blocked_call_in_fsync_mode_syncs_once_and_runs_nothing(
    counted: tuple[Gateway, SyncLog],
) -> None:
    gateway, log = counted
    before, after = _syncs_around(gateway, log, _call(1, "fs.delete"))
    assert after == []  # no execution.started: nothing ran
    assert _names(before) == ["audit.sqlite-wal"]  # the refusal's records, one commit


@pytest.mark.parametrize("counted", ["os"], indirect=True)
def test_os_mode_never_waits_for_the_disk_around_a_call(
    counted: tuple[Gateway, SyncLog],
) -> None:
    gateway, log = counted
    for n in range(1, 4):
        assert _syncs_around(gateway, log, _call(n)) == ([], [])
