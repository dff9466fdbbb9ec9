"""Held calls across a killed process, through the gateway and the real CLI.

Detached (the default): the request outlives the process that held it; a new gateway leaves it
pending, a reviewer decides it, and it resumes exactly once. Awaited (`proctor ask --wait`):
the waiting process alone can resume it, so once that process is killed, the next gateway's
start-up reconciliation expires the request, audits `approval.expired`, and nothing runs.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import IO

import pytest

from governance import Principal, ToolCall
from governance._gateway import Gateway
from governance.tools import refund_drafts

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_POLICY = Path(str(resources.files("governance") / "data" / "default_policy.yaml"))
REFUND_SCRIPT = ROOT / "scenarios" / "scripts" / "refund-over-limit.yaml"
AUDIT_KEY = "held-calls-restart-key"
ANN = Principal("ann", "support-agent", "support")
REFUND = {"order_id": "ORD-0003", "amount": 250.0, "reason": "arrived broken"}

# A process that holds one call through a default gateway, says which, then waits to be killed.
HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from governance import Principal, ToolCall
    from governance._gateway import Gateway
    state, policy = Path(sys.argv[1]), Path(sys.argv[2])
    call = ToolCall("c1", "refunds.create_draft",
                    {"order_id": "ORD-0003", "amount": 250.0, "reason": "arrived broken"},
                    "run-detached", Principal("ann", "support-agent", "support"))
    with Gateway(state_dir=state, policy_path=policy) as gateway:
        held = gateway.firewall.call(call)
        print(held.outcome, held.approval_id, flush=True)
        sys.stdin.readline()
    """
)

# The same, registered as the call's waiter (`held_calls="awaited"`, as `proctor ask --wait`).
AWAITING_HOLDER = HOLDER.replace(
    "Gateway(state_dir=state, policy_path=policy)",
    'Gateway(state_dir=state, policy_path=policy, held_calls="awaited")',
).replace("run-detached", "run-awaited")
assert AWAITING_HOLDER != HOLDER


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROCTOR_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return {**env, "PROCTOR_AUDIT_KEY": AUDIT_KEY}


@pytest.fixture(autouse=True)
def _audit_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # This process opens the same stores as its children: the same keys.
    for name in [k for k in os.environ if k.startswith("PROCTOR_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PROCTOR_AUDIT_KEY", AUDIT_KEY)


@contextmanager
def _child(*argv: str) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=_env(),
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


def _line(proc: subprocess.Popen[str], stream: IO[str] | None, timeout: float = 60) -> str:
    """One line from the child's `stream`, or fail (with what it said) rather than hang."""
    assert stream is not None
    ready, _, _ = select.select([stream], [], [], timeout)
    if not ready:
        proc.kill()
        pytest.fail(f"the child said nothing within {timeout}s")
    line = stream.readline()
    if not line:
        out, err = proc.communicate(timeout=30)
        pytest.fail(f"the child exited early ({proc.returncode}):\n{out}\n{err}")
    return line.strip()


def _kill(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL


def _ask(state: Path, run_id: str, *extra: str) -> list[str]:
    return [
        "-m", "harness", "ask", "--state-dir", str(state), "--script", str(REFUND_SCRIPT),
        "--run-id", run_id, "--actor", "ann", *extra, "draft the refund for ORD-0003",
    ]  # fmt: skip


def test_a_detached_held_call_survives_a_killed_process_and_resumes_once(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with _child("-c", HOLDER, str(state), str(SHIPPED_POLICY)) as holder:
        outcome, approval_id = _line(holder, holder.stdout).split()
        assert outcome == "held"
        _kill(holder)
    with Gateway(state_dir=state, policy_path=SHIPPED_POLICY) as gateway:
        assert gateway.reconciled == []
        request = gateway.approvals.get(approval_id)
        assert (request.status, request.waiter) == ("pending", None)
        assert [r.id for r in gateway.approvals.list(status="pending")] == [approval_id]
        gateway.firewall.approve(approval_id, "bob")
        call = ToolCall("c1", "refunds.create_draft", REFUND, "run-detached", ANN)
        first = gateway.firewall.resume_held(approval_id, call)
        again = gateway.firewall.resume_held(approval_id, call)
        assert first.outcome == "executed", first.error
        assert (again.outcome, again.reason) == ("blocked", "approval_already_used")
        assert len(refund_drafts(gateway.workspace)) == 1
        kinds = [e.kind for e in gateway.audit.events("run-detached")]
        assert "approval.expired" not in kinds
        assert kinds.count("execution.started") == 1


def test_a_waiting_ask_killed_mid_wait_has_its_request_expired_at_the_next_start(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    # A detached request whose process has exited: reconciliation must leave it alone.
    detached = subprocess.run(
        [sys.executable, *_ask(state, "run-detached")],
        capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=120,
    )  # fmt: skip
    assert detached.returncode == 0, detached.stderr
    with Gateway(state_dir=state, policy_path=SHIPPED_POLICY) as gateway:
        (kept,) = gateway.approvals.list(status="pending")
    with _child(*_ask(state, "run-waiting", "--wait", "600")) as waiter:
        said = _line(waiter, waiter.stderr)
        assert "is held; waiting up to 600s" in said, said
        waited = said.split()[0]
        _kill(waiter)
    assert waited != kept.id
    with Gateway(state_dir=state, policy_path=SHIPPED_POLICY) as gateway:
        assert gateway.reconciled == [waited]
        expired = gateway.approvals.get(waited)
        assert (expired.status, expired.status_reason) == ("expired", "process restarted")
        events = gateway.audit.events("run-waiting")
        (audited,) = [e for e in events if e.kind == "approval.expired"]
        assert audited.data["approval_id"] == waited
        assert audited.data["reason"] == "process restarted"
        assert "execution.started" not in [e.kind for e in events]
        assert gateway.approvals.get(kept.id).status == "pending"
        assert gateway.audit.verify("run-waiting").ok
        # Nothing can run it now: approving is refused, resuming executes nothing.
        call = ToolCall("c1", "refunds.create_draft", REFUND, "run-waiting", ANN)
        resumed = gateway.firewall.resume_held(waited, call)
        assert (resumed.outcome, resumed.reason) == ("blocked", "approval_expired")
        assert refund_drafts(gateway.workspace) == []
    with Gateway(state_dir=state, policy_path=SHIPPED_POLICY) as again:
        assert again.reconciled == []  # expired once, audited once
        kinds = [e.kind for e in again.audit.events("run-waiting")]
        assert kinds.count("approval.expired") == 1


def test_a_waiting_ask_resumes_the_run_once_a_reviewer_approves(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with _child(*_ask(state, "run-live", "--wait", "120")) as waiter:
        said = _line(waiter, waiter.stderr)
        approval_id = said.split()[0]
        with Gateway(state_dir=state, policy_path=SHIPPED_POLICY) as reviewer:
            assert reviewer.reconciled == []  # its waiter is alive
            assert reviewer.approvals.get(approval_id).waiter is not None
            reviewer.firewall.approve(approval_id, "bob")
        out, err = waiter.communicate(timeout=120)
        assert waiter.returncode == 0, err
    assert "run run-live: completed" in out
    with Gateway(state_dir=state, policy_path=SHIPPED_POLICY) as gateway:
        assert len(refund_drafts(gateway.workspace)) == 1
        assert gateway.approvals.get(approval_id).consumed is True


def test_a_waiting_ask_withdraws_a_call_nobody_decided_in_time(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with _child(*_ask(state, "run-late", "--wait", "0.5")) as waiter:
        out, err = waiter.communicate(timeout=120)
    assert waiter.returncode in (0, 1), err
    assert "waiting_approval" not in out
    with Gateway(state_dir=state, policy_path=SHIPPED_POLICY) as gateway:
        (request,) = gateway.approvals.list(run_id="run-late")
        assert (request.status, request.decided_by) == ("cancelled", "proctor")
        kinds = [e.kind for e in gateway.audit.events("run-late")]
        assert "approval.cancelled" in kinds and "execution.started" not in kinds
        assert refund_drafts(gateway.workspace) == []


def test_an_approved_awaited_call_whose_waiter_died_expires_at_the_next_start(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    with _child("-c", AWAITING_HOLDER, str(state), str(SHIPPED_POLICY)) as holder:
        outcome, approval_id = _line(holder, holder.stdout).split()
        assert outcome == "held"
        approve = [sys.executable, "-m", "harness", "approvals", "approve", approval_id]
        approved = subprocess.run(
            [*approve, "--state-dir", str(state), "--reviewer", "bob"],
            capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=120,
        )  # fmt: skip
        assert approved.returncode == 0, approved.stderr
        # Only the waiting process can resume it: the hint must not send the reviewer to a
        # `proctor approvals resume` that has no stored run to resume.
        assert "proctor approvals resume" not in approved.stdout, approved.stdout
        assert "that process resumes it" in approved.stdout, approved.stdout
        with Gateway(state_dir=state, policy_path=SHIPPED_POLICY) as reviewer:
            assert reviewer.reconciled == []  # its waiter is alive
            assert reviewer.approvals.get(approval_id).status == "approved"
        _kill(holder)  # dies before it resumes the call
    with Gateway(state_dir=state, policy_path=SHIPPED_POLICY) as gateway:
        assert gateway.reconciled == [approval_id]
        expired = gateway.approvals.get(approval_id)
        assert (expired.status, expired.status_reason) == ("expired", "process restarted")
        assert expired.consumed is False
        events = gateway.audit.events("run-awaited")
        (audited,) = [e for e in events if e.kind == "approval.expired"]
        assert audited.data["approval_id"] == approval_id
        assert audited.data["reason"] == "process restarted"
        assert audited.data["approved_by"] == "bob"
        assert gateway.audit.verify("run-awaited").ok
        call = ToolCall("c1", "refunds.create_draft", REFUND, "run-awaited", ANN)
        resumed = gateway.firewall.resume_held(approval_id, call)
        assert (resumed.outcome, resumed.reason) == ("blocked", "approval_expired")
        assert refund_drafts(gateway.workspace) == []
        assert "execution.started" not in [e.kind for e in gateway.audit.events("run-awaited")]
    with Gateway(state_dir=state, policy_path=SHIPPED_POLICY) as again:
        assert again.reconciled == []  # expired once, audited once
        kinds = [e.kind for e in again.audit.events("run-awaited")]
        assert kinds.count("approval.expired") == 1
