"""What one governed call asks of the audit file: one INSERT before the tool runs (the held
events and `execution.started`, one statement) and one after, and no read of the chain."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from governance import ManualClock, Principal, ToolCall
from governance._firewall import LifecycleEvent
from governance._gateway import Gateway
from governance.stores._audit import AuditLog
from tests.conftest import SHIPPED_POLICY

ANN = Principal("ann", "agent", "ops")


@pytest.fixture(params=["os", "fsync"])
def gateway(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Gateway]:
    with Gateway(
        state_dir=tmp_path / "state",
        policy_path=SHIPPED_POLICY,
        clock=ManualClock(),
        durability=request.param,
    ) as gateway:
        yield gateway


def _statements(gateway: Gateway) -> list[str]:
    audit = gateway.audit
    assert isinstance(audit, AuditLog) and audit._conn is not None
    seen: list[str] = []
    audit._conn.set_trace_callback(seen.append)
    return seen


def test_an_allowed_call_writes_one_insert_before_the_tool_and_one_after(
    gateway: Gateway,
) -> None:
    run = "run-1"
    first = ToolCall("c0", "orders.lookup", {"order_id": "ORD-0001"}, run, ANN)
    assert gateway.firewall.call(first).outcome == "executed"
    seen = _statements(gateway)
    before_tool: list[int] = []

    def watch(event: LifecycleEvent) -> None:
        if event.kind == "execution.started":
            before_tool.append(len(seen))

    gateway.firewall.add_observer(watch)
    for n in range(1, 4):
        start = len(seen)
        call = ToolCall(f"c{n}", "orders.lookup", {"order_id": "ORD-0001"}, run, ANN)
        assert gateway.firewall.call(call).outcome == "executed"
        written = seen[start:]
        assert len(written) == 2, written
        assert all(s.upper().startswith("INSERT INTO AUDIT_EVENTS") for s in written), written
        assert before_tool[-1] == start + 1  # the first INSERT stood before the tool ran
    verdict = gateway.audit.verify(run)
    assert verdict.ok and verdict.events == 16
