"""Approval races and restarts across real processes sharing one SQLite file."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any

import pytest

from governance.core._contracts import Principal
from governance.core._process_token import current_process_token, process_is_alive
from governance.stores._approvals import ApprovalConflict, ApprovalRequest, ApprovalStore

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
REQUESTS = 40
ALICE = Principal(actor="alice", agent="ops-agent", team="platform")

# One role per process. Every process prints "ready", waits for "go" on stdin (a barrier across
# processes), then works through the same ids in the same order and reports what it got.
RACER = textwrap.dedent(
    """
    import json, sys
    from governance.stores._approvals import ApprovalConflict, ApprovalStore
    db, role, name, ids = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    with ApprovalStore(db, busy_timeout=30) as store:
        print("ready", flush=True)
        assert sys.stdin.readline() == "go\\n"
        got = {}
        for rid in ids:
            try:
                if role == "approve":
                    store.approve(rid, name)
                elif role == "reject":
                    store.reject(rid, name, comment="not today")
                elif role == "cancel":
                    store.cancel(rid, by=name, reason="run ended")
                elif role == "consume":
                    got[rid] = store.consume(rid)
                    continue
                got[rid] = "won"
            except ApprovalConflict as exc:
                got[rid] = exc.current_status
        print(json.dumps(got), flush=True)
    """
)

# A gateway holding calls for in-memory waiters, then blocking on one of them until killed.
WAITER = textwrap.dedent(
    """
    import sys
    from governance.stores._approvals import ApprovalStore
    from governance.core._contracts import Principal
    from governance.core._process_token import current_process_token
    token = current_process_token()
    fields = dict(
        run_id="run-child", tool="fs.delete", arguments={"path": "a"},
        arguments_digest="sha256:" + "a" * 64, principal=Principal("alice", "agent", "team"),
        policy_digest="sha256:" + "p" * 64, rule_ids=["approve-deletes"],
        reason="rule:approve-deletes", risk="high", waiter=token,
    )
    with ApprovalStore(sys.argv[1]) as store:
        held = store.create(call_id="c1", **fields)
        decided = store.create(call_id="c2", **fields)
        print(held.id, decided.id, token, flush=True)
        store.wait(held.id, timeout=120)
    """
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return env


def _spawn(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=_env(),
    )


def _read_line(proc: subprocess.Popen[str], timeout: float = 30) -> str:
    """One line of the child's stdout, or fail (with its stderr) rather than hang."""
    stdout: IO[str] | None = proc.stdout
    assert stdout is not None
    ready, _, _ = select.select([stdout], [], [], timeout)
    if not ready:
        proc.kill()
        _, err = proc.communicate(timeout=10)
        pytest.fail(f"child printed nothing within {timeout}s; stderr:\n{err}")
    line = stdout.readline()
    if not line:
        _, err = proc.communicate(timeout=10)
        pytest.fail(f"child exited early ({proc.returncode}); stderr:\n{err}")
    return line.strip()


@contextmanager
def _children(specs: Sequence[tuple[str, ...]]) -> Iterator[list[subprocess.Popen[str]]]:
    """Start one child per spec; whatever happens, none outlives the test."""
    with ExitStack() as stack:
        procs = [stack.enter_context(_spawn(*spec)) for spec in specs]
        try:
            yield procs
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(timeout=10)


def _race(db: Path, roles: list[tuple[str, str]], ids: list[str]) -> list[dict[str, Any]]:
    """Run one process per (role, name), release them together, collect what each got."""
    specs = [(RACER, str(db), role, name, json.dumps(ids)) for role, name in roles]
    with _children(specs) as procs:
        for proc in procs:
            assert _read_line(proc) == "ready"
        for proc in procs:  # all are parked on readline(): release them together
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        reports = []
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
            reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


def _hold(store: ApprovalStore, n: int, waiter: str | None = None) -> ApprovalRequest:
    return store.create(
        run_id="run-1",
        call_id=f"c{n}",
        tool="fs.delete",
        arguments={"path": f"notes/{n}.txt"},
        arguments_digest="sha256:" + "a" * 64,
        principal=ALICE,
        policy_digest="sha256:" + "p" * 64,
        rule_ids=("approve-deletes",),
        reason="rule:approve-deletes",
        risk="high",
        waiter=waiter,
    )


def test_processes_deciding_the_same_requests_leave_exactly_one_winner_each(
    tmp_path: Path,
) -> None:
    db = tmp_path / "approvals.db"
    with ApprovalStore(db) as store:
        ids = [_hold(store, n).id for n in range(REQUESTS)]
    roles = [("approve", "bob"), ("approve", "dave"), ("reject", "carol"), ("cancel", "runner")]
    reports = _race(db, roles, ids)
    status_of_role = {"approve": "approved", "reject": "rejected", "cancel": "cancelled"}
    with ApprovalStore(db) as store:
        finals = {r.id: r for r in store.list()}
    assert sorted(finals) == sorted(ids)
    for rid in ids:
        final = finals[rid]
        claimed = [i for i, report in enumerate(reports) if report[rid] == "won"]
        assert len(claimed) == 1, (rid, [report[rid] for report in reports])
        role, name = roles[claimed[0]]
        assert final.status == status_of_role[role]
        assert final.decided_by == name
        losers = [report[rid] for i, report in enumerate(reports) if i != claimed[0]]
        assert losers == [final.status] * (len(roles) - 1), "every loser names the final state"


def test_processes_consuming_the_same_approvals_execute_each_exactly_once(
    tmp_path: Path,
) -> None:
    db = tmp_path / "approvals.db"
    with ApprovalStore(db) as store:
        ids = []
        for n in range(REQUESTS):
            ids.append(_hold(store, n).id)
            store.approve(ids[-1], "bob")
    reports = _race(db, [("consume", f"gateway-{i}") for i in range(3)], ids)
    with ApprovalStore(db) as store:
        assert all(r.consumed for r in store.list())
    for rid in ids:
        assert [report[rid] for report in reports].count(True) == 1, rid


def test_a_killed_waiters_requests_are_expired_at_restart_and_no_other(tmp_path: Path) -> None:
    db = tmp_path / "approvals.db"
    mine = current_process_token()
    with ApprovalStore(db) as store:
        detached = _hold(store, 1)
        ours = _hold(store, 2, waiter=mine)
    with _children([(WAITER, str(db))]) as (child,):
        held_id, decided_id, child_token = _read_line(child).split()
        assert child_token != mine and process_is_alive(child_token)
        with ApprovalStore(db) as store:
            store.approve(decided_id, "bob")
            # While the child lives, its request is not reconciled away.
            assert store.reconcile() == []
            assert store.get(held_id).status == "pending"
        child.kill()  # SIGKILL: no cleanup code runs in the child
        assert child.wait(timeout=10) == -signal.SIGKILL
    assert not process_is_alive(child_token)

    with ApprovalStore(db) as restarted:
        # Approved but never consumed: only its dead waiter could have resumed it.
        assert restarted.reconcile() == [held_id, decided_id]
        for rid in (held_id, decided_id):
            held = restarted.get(rid)
            assert (held.status, held.status_reason, held.waiter) == (
                "expired",
                "process restarted",
                child_token,
            )
        assert restarted.get(detached.id).status == "pending", "detached requests survive"
        assert restarted.get(ours.id).status == "pending", "a live waiter keeps its request"
        assert restarted.reconcile() == []
        with pytest.raises(ApprovalConflict, match=r"has expired \(process restarted\)"):
            restarted.approve(held_id, "bob")
        assert restarted.consume(decided_id) is False


# -- crash windows: kill -9 between a state change and its audit event ----------------------

CRASH_POLICY = """
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - id: hold-email
    effect: require_approval
    match: {tool: email.send}
"""

# A gateway that holds an email, optionally approves and resumes it, and freezes just before
# the audit event named in argv[3] is appended: the parent then kills it with SIGKILL.
CRASHER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from governance.core._contracts import Principal, ToolCall
    from governance._gateway import Gateway
    state, policy, freeze_at, stage = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    gw = Gateway(state_dir=state, policy_path=policy)
    append = gw.audit.append
    def frozen(run_id, kind, data):
        if kind == freeze_at:
            print("window", flush=True)
            sys.stdin.readline()  # never answered: killed here
        return append(run_id, kind, data)
    gw.audit.append = frozen
    call = ToolCall("c1", "email.send", {"to": "a@example.com", "subject": "s", "body": "b"},
                    "run-1", Principal("ann", "bot", "team"))
    held = gw.firewall.call(call)
    if stage in ("approve", "resume"):
        gw.firewall.approve(held.approval_id, "bob")
    if stage == "resume":
        gw.firewall.resume_held(held.approval_id, call)
    print("finished", flush=True)
    """
)
CRASH_CALL = {"to": "a@example.com", "subject": "s", "body": "b"}


def _crash_at(tmp_path: Path, freeze_at: str, stage: str) -> tuple[Path, Path]:
    state, policy = tmp_path / "state", tmp_path / "policy.yaml"
    policy.write_text(CRASH_POLICY)
    with _children([(CRASHER, str(state), str(policy), freeze_at, stage)]) as (child,):
        assert _read_line(child) == "window"
        child.kill()  # SIGKILL: no cleanup, no further audit event
        assert child.wait(timeout=10) == -signal.SIGKILL
    return state, policy


def _restart_and_resume(state: Path, policy: Path) -> tuple[list[str], str | None, int]:
    from governance._gateway import Gateway
    from governance.core._contracts import ToolCall
    from governance.tools import outbox_rows

    with Gateway(state_dir=state, policy_path=policy) as gateway:
        found = [f.describe() for f in gateway.in_doubt]
        call = ToolCall("c1", "email.send", dict(CRASH_CALL), "run-1", ALICE_ANN)
        result = gateway.firewall.resume_held("apr-1", call)
        assert result.outcome != "executed"
        assert gateway.audit.verify("run-1").ok
        kinds = [e.kind for e in gateway.audit.events("run-1")]
        assert "approval.in_doubt" in kinds
        return found, result.reason, len(outbox_rows(gateway.workspace))


ALICE_ANN = Principal("ann", "bot", "team")


def test_killed_between_holding_and_approval_required_the_request_is_reported_and_cancelled(
    tmp_path: Path,
) -> None:
    state, policy = _crash_at(tmp_path, "approval.required", "hold")
    with ApprovalStore(state / "approvals.sqlite") as store:
        assert store.get("apr-1").in_flight == "approval.required"
        with pytest.raises(ApprovalConflict, match="not yet recorded on the audit chain"):
            store.approve("apr-1", "bob")
    listed = subprocess.run(
        [sys.executable, "-m", "harness", "approvals", "list", "--state-dir", str(state),
         "--policy", str(policy)],
        capture_output=True, text=True, timeout=60, cwd=ROOT, env=_env(), check=False,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert "in doubt after a crash: apr-1" in listed.stderr
    assert "approval.required never reached the audit chain" in listed.stderr
    assert "IN DOUBT" in listed.stdout and "cancelled" in listed.stdout
    found, reason, sent = _restart_and_resume(state, policy)
    assert found == [], "reported once, at the start-up that found it; the row keeps the note"
    assert (reason, sent) == ("approval_cancelled", 0)


def test_killed_between_approving_and_approval_approved_the_approval_is_never_used(
    tmp_path: Path,
) -> None:
    state, policy = _crash_at(tmp_path, "approval.approved", "approve")
    found, reason, sent = _restart_and_resume(state, policy)
    assert len(found) == 1 and "approval.approved never reached the audit chain" in found[0]
    assert (reason, sent) == ("approval_in_doubt", 0)


def test_killed_after_consuming_but_before_execution_nothing_runs_then_or_after_restart(
    tmp_path: Path,
) -> None:
    state, policy = _crash_at(tmp_path, "execution.started", "resume")
    found, reason, sent = _restart_and_resume(state, policy)
    assert len(found) == 1 and "consumed, but the call never executed" in found[0]
    assert (reason, sent) == ("approval_in_doubt", 0)


def test_killed_after_executing_but_before_the_outcome_it_never_executes_twice(
    tmp_path: Path,
) -> None:
    state, policy = _crash_at(tmp_path, "execution.completed", "resume")
    found, reason, sent = _restart_and_resume(state, policy)
    assert len(found) == 1 and "no outcome was recorded: the effect is unknown" in found[0]
    assert (reason, sent) == ("approval_in_doubt", 1), "it ran once, before the kill; never again"
