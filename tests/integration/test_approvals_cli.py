"""The README's worked example, as a user runs it: ask, review, approve with an edit, resume."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scenarios" / "scripts" / "refund-over-limit.yaml"


def _proctor(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROCTOR_")}
    env["PROCTOR_STATE_DIR"] = str(state)
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def test_hold_review_edit_and_resume_from_the_command_line(tmp_path: Path) -> None:
    state = tmp_path / "state"
    asked = _proctor(state, "ask", "--script", str(SCRIPT), "refund ORD-0003", "--run-id", "r1")
    assert asked.returncode == 0, asked.stderr
    assert "run r1: waiting_approval" in asked.stdout and "apr-1" in asked.stdout

    listed = json.loads(_proctor(state, "approvals", "list", "--json").stdout)
    assert [(r["id"], r["status"], r["tool"]) for r in listed] == [
        ("apr-1", "pending", "refunds.create_draft")
    ]

    self_approved = _proctor(state, "approvals", "approve", "apr-1", "--reviewer", "cli-user")
    assert self_approved.returncode == 1 and "cannot approve" in self_approved.stderr

    refused = _proctor(
        state, "approvals", "approve", "apr-1", "--reviewer", "bob", "--set", "order_id=ORD-9"
    )
    assert refused.returncode == 1 and "edit refused" in refused.stderr
    assert json.loads(_proctor(state, "approvals", "show", "apr-1", "--json").stdout)[
        "status"
    ] == "pending"

    approved = _proctor(
        state, "approvals", "approve", "apr-1", "--reviewer", "bob", "--set", "amount=80"
    )
    assert approved.returncode == 0, approved.stderr
    assert "resume the run with: proctor approvals resume r1" in approved.stdout

    resumed = _proctor(state, "approvals", "resume", "r1", "--json")
    assert resumed.returncode == 0, resumed.stderr
    run = json.loads(resumed.stdout)
    assert (run["status"], run["final_answer"]) == (
        "completed",
        "Drafted refund 1 of 80.0 for ORD-0003.",
    )
    verified = _proctor(state, "audit", "verify", str(state / "audit.sqlite"), "--run", "r1")
    assert verified.returncode == 0


def test_reject_then_resume_reports_the_refusal(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _proctor(state, "ask", "--script", str(SCRIPT), "refund ORD-0003", "--run-id", "r1")
    no_comment = _proctor(state, "approvals", "reject", "apr-1", "--reviewer", "bob")
    assert no_comment.returncode == 64  # --comment is required
    rejected = _proctor(
        state, "approvals", "reject", "apr-1", "--reviewer", "bob", "--comment", "too much"
    )
    assert rejected.returncode == 0
    resumed = _proctor(state, "approvals", "resume", "r1", "--json")
    assert resumed.returncode == 1  # a blocked run is not a success, as with `proctor ask`
    run = json.loads(resumed.stdout)
    assert run["status"] == "blocked" and run["model_text"] == "The refund was not drafted."


def test_unknown_ids_are_usage_errors(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert _proctor(state, "approvals", "show", "apr-9").returncode == 64
    missing = _proctor(state, "approvals", "resume", "nope")
    assert missing.returncode == 64 and "no stored run 'nope'" in missing.stderr
