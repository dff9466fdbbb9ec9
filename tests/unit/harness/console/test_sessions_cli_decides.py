"""A console turn waiting on a held call continues when `proctor approvals` decides it from
another process against the same state directory: no resume step, no console action."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from governance.tools import outbox_rows
from tests.unit.harness.console.conftest import EMAIL_SCRIPT, Console, wait_for

pytestmark = pytest.mark.slow


def _proctor(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PROCTOR_STATE_DIR": str(state)}
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def test_an_approval_from_the_cli_in_another_process_resumes_the_waiting_turn(
    make_console: Callable[..., Console],
) -> None:
    console = make_console()  # the system clock: the CLI process reads the same expiry
    sessions = console.open(EMAIL_SCRIPT)
    run_id = sessions.start("mail the CFO", "alice")
    approval_id = wait_for(console, run_id, {"waiting_approval"})["held"]["approval_id"]

    own = _proctor(console.state_dir, "approvals", "approve", approval_id, "--reviewer", "alice")
    assert own.returncode == 1 and "cannot approve" in own.stderr
    assert sessions.view(run_id)["status"] == "waiting_approval"
    assert outbox_rows(console.gateway.workspace) == []

    approved = _proctor(console.state_dir, "approvals", "approve", approval_id, "--reviewer", "bob")
    assert approved.returncode == 0, approved.stderr
    view = wait_for(console, run_id, {"completed"})
    assert view["final_answer"] == "Sent as message 1."
    assert len(outbox_rows(console.gateway.workspace)) == 1
    decided = [e["data"] for e in view["events"] if e["name"] == "decided"]
    assert [(d["status"], d["decided_by"]) for d in decided] == [("approved", "bob")]


def test_a_rejection_from_the_cli_in_another_process_finishes_the_turn(
    make_console: Callable[..., Console],
) -> None:
    console = make_console()
    sessions = console.open(EMAIL_SCRIPT)
    run_id = sessions.start("mail the CFO", "alice")
    approval_id = wait_for(console, run_id, {"waiting_approval"})["held"]["approval_id"]
    rejected = _proctor(
        console.state_dir, "approvals", "reject", approval_id, "--reviewer", "bob",
        "--comment", "not today",
    )  # fmt: skip
    assert rejected.returncode == 0, rejected.stderr
    view = wait_for(console, run_id, {"blocked"})
    assert (
        "approval_rejected" in [m for m in view["messages"] if m["role"] == "tool"][-1]["content"]
    )
    assert outbox_rows(console.gateway.workspace) == []
