"""`os` durability (WAL, synchronous=NORMAL) loses nothing committed when the process is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from governance.stores._approvals import ApprovalStore
from governance.stores._audit import AuditLog
from governance.stores._budgets import BudgetStore
from tests.conftest import SHIPPED_POLICY

CHILD = """
import sys
from pathlib import Path
from governance import Principal, ToolCall
from governance._gateway import Gateway

gw = Gateway(
    state_dir=Path(sys.argv[1]), policy_path=Path(sys.argv[2]), durability="os",
    audit_key_from_env=False,
)
ann = Principal("ann", "agent", "ops")
for n in range(1, 4):
    call = ToolCall(f"c{n}", "orders.lookup", {"order_id": "ORD-0001"}, "run-k", ann)
    print(gw.firewall.call(call).outcome, flush=True)
email = {"to": "a@b.co", "subject": "s", "body": "b"}
held = gw.firewall.call(ToolCall("c4", "email.send", email, "run-k", ann))
print(held.outcome, held.approval_id, flush=True)
sys.stdin.read()  # never returns: the parent kills this process mid-life, stores still open
"""


@pytest.mark.slow
def test_os_mode_loses_nothing_committed_when_the_process_is_killed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(state), str(SHIPPED_POLICY)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PROCTOR_AUDIT_KEY": "", "PROCTOR_APPROVALS_KEY": ""},
    ) as child:
        try:
            assert child.stdout is not None
            lines = [child.stdout.readline().strip() for _ in range(4)]
            assert lines[:3] == ["executed"] * 3, lines
            held_outcome, approval_id = lines[3].split()
            # Every call returned: its events were committed. Now die without closing anything.
            child.send_signal(signal.SIGKILL)
            assert child.wait(timeout=30) == -signal.SIGKILL
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=30)
    # Nothing was checkpointed on a clean close: the commits live in the WAL the OS kept.
    assert (state / "audit.sqlite-wal").stat().st_size > 0
    with AuditLog(state / "audit.sqlite", readonly=True) as log:
        kinds = [event.kind for event in log.events("run-k")]
        assert log.verify("run-k").ok
    per_call = ["tool.requested", "policy.decided", "execution.started", "execution.completed"]
    assert kinds[:12] == per_call * 3
    assert kinds[12:] == ["tool.requested", "policy.decided", "approval.required"]
    with ApprovalStore(state / "approvals.sqlite") as approvals:
        assert held_outcome == "held"
        assert approvals.get(approval_id).status == "pending"
        assert approvals.get(approval_id).in_flight is None
    with BudgetStore(state / "budgets.sqlite") as budgets:
        assert all(row.status != "reserved" for row in budgets.ledger())
