"""Held calls' raw arguments: sealed at rest, in a 0600 file, shown only redacted."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from governance import ManualClock, Principal, ToolCall
from governance._gateway import Gateway
from governance.stores._approvals import ApprovalStore
from governance.tools import outbox_rows
from harness.cli import cli

POLICY = """
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - id: hold-email
    effect: require_approval
    match: {tool: email.send}
"""
# Shapes the redactor knows (so the display copy is masked) plus the literal bytes to hunt for.
SECRET = "ghp_" + "Zq8" * 12
BODY = f"deploy with token {SECRET} please"
ANN = Principal("ann", "mail-bot", "support")


@pytest.fixture
def policy_path(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    return path


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROCTOR_AUDIT_KEY", raising=False)
    monkeypatch.setenv("PROCTOR_APPROVALS_KEY", "k" * 64)


def _gateway(tmp_path: Path, policy_path: Path, clock: ManualClock) -> Gateway:
    return Gateway(state_dir=tmp_path / "state", policy_path=policy_path, clock=clock)


@pytest.fixture
def gateway(
    tmp_path: Path, policy_path: Path, clock: ManualClock, keyed: None
) -> Iterator[Gateway]:
    with _gateway(tmp_path, policy_path, clock) as gw:
        yield gw


def _email(body: str = BODY, call_id: str = "c1") -> ToolCall:
    arguments = {"to": "ops@example.com", "subject": "deploy", "body": body}
    return ToolCall(call_id, "email.send", arguments, "run-1", ANN)


def _hold(gateway: Gateway, call: ToolCall) -> str:
    result = gateway.firewall.call(call)
    assert result.outcome == "held" and result.approval_id is not None
    return result.approval_id


def _store_bytes(state: Path) -> bytes:
    files = [state / f"approvals.sqlite{suffix}" for suffix in ("", "-wal", "-shm")]
    return b"".join(path.read_bytes() for path in files if path.exists())


def test_with_a_key_the_secret_is_in_no_byte_of_the_store_or_its_wal(gateway: Gateway) -> None:
    call = _email()
    approval_id = _hold(gateway, call)
    gateway.firewall.approve(approval_id, "bob", arguments={**call.arguments, "subject": "ok"})
    raw = _store_bytes(gateway.state_dir)
    assert (gateway.state_dir / "approvals.sqlite-wal").stat().st_size > 0, "rows sit in the WAL"
    assert SECRET.encode() not in raw
    conn = sqlite3.connect(gateway.approvals.path)
    sealed = conn.execute("SELECT sealed_arguments, sealed_approved_arguments FROM approvals")
    assert all(value.startswith("aesgcm1:") for value in sealed.fetchone())
    conn.close()
    shown = gateway.approvals.get(approval_id)
    assert SECRET not in json.dumps(shown.shown_arguments)
    assert SECRET not in json.dumps(shown.shown_approved_arguments)
    assert SECRET not in repr(shown)


def test_approving_and_resuming_executes_with_the_exact_raw_arguments(gateway: Gateway) -> None:
    call = _email()
    approval_id = _hold(gateway, call)
    gateway.firewall.approve(approval_id, "bob")
    result = gateway.firewall.resume_held(approval_id, call)
    assert result.outcome == "executed", result.error
    (sent,) = outbox_rows(gateway.workspace)
    assert sent["body"] == BODY


def test_a_reviewers_edit_is_sealed_too_and_executes_exactly(gateway: Gateway) -> None:
    call = _email()
    approval_id = _hold(gateway, call)
    edited_body = f"use {SECRET} only once"
    gateway.firewall.approve(approval_id, "bob", arguments={**call.arguments, "body": edited_body})
    assert SECRET.encode() not in _store_bytes(gateway.state_dir)
    assert gateway.firewall.resume_held(approval_id, call).outcome == "executed"
    assert [row["body"] for row in outbox_rows(gateway.workspace)] == [edited_body]


def _tamper(state: Path, sql: str, *params: object) -> None:
    conn = sqlite3.connect(state / "approvals.sqlite")
    with conn:
        conn.execute(sql, params)
    conn.close()


def test_a_flipped_byte_in_the_ciphertext_refuses_the_call(gateway: Gateway) -> None:
    call = _email()
    approval_id = _hold(gateway, call)
    gateway.firewall.approve(approval_id, "bob")
    stored = gateway.approvals.path
    conn = sqlite3.connect(stored)
    (sealed,) = conn.execute(
        "SELECT sealed_arguments FROM approvals WHERE id = ?", (approval_id,)
    ).fetchone()
    conn.close()
    flipped = sealed[:-6] + ("A" if sealed[-6] != "A" else "B") + sealed[-5:]
    _tamper(gateway.state_dir, "UPDATE approvals SET sealed_arguments = ?", flipped)
    result = gateway.firewall.resume_held(approval_id, call)
    assert (result.outcome, result.reason) == ("blocked", "approval_arguments_tampered")
    assert outbox_rows(gateway.workspace) == []


def test_a_ciphertext_moved_from_another_request_does_not_open(gateway: Gateway) -> None:
    first, second = _email(call_id="c1"), _email(body="hello", call_id="c2")
    a, b = _hold(gateway, first), _hold(gateway, second)
    gateway.firewall.approve(b, "bob")
    _tamper(
        gateway.state_dir,
        "UPDATE approvals SET sealed_arguments = "
        "(SELECT sealed_arguments FROM approvals WHERE id = ?) WHERE id = ?",
        a,
        b,
    )
    result = gateway.firewall.resume_held(b, second)
    assert result.reason == "approval_arguments_tampered"
    assert outbox_rows(gateway.workspace) == []


def test_clear_text_arguments_are_refused_when_a_key_is_configured(gateway: Gateway) -> None:
    call = _email()
    approval_id = _hold(gateway, call)
    gateway.firewall.approve(approval_id, "bob")
    _tamper(
        gateway.state_dir,
        "UPDATE approvals SET sealed_arguments = ?",
        "plain:" + json.dumps(call.arguments),
    )
    result = gateway.firewall.resume_held(approval_id, call)
    assert result.reason == "approval_arguments_unsealed"
    assert outbox_rows(gateway.workspace) == []


def test_without_the_key_sealed_arguments_are_refused_not_guessed(
    tmp_path: Path, policy_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROCTOR_APPROVALS_KEY", "k" * 64)
    call = _email()
    with _gateway(tmp_path, policy_path, clock) as gateway:
        approval_id = _hold(gateway, call)
        gateway.firewall.approve(approval_id, "bob")
    monkeypatch.setenv("PROCTOR_APPROVALS_KEY", "another" * 10)
    with _gateway(tmp_path, policy_path, clock) as gateway:
        wrong = gateway.firewall.resume_held(approval_id, call)
    monkeypatch.delenv("PROCTOR_APPROVALS_KEY")
    with _gateway(tmp_path, policy_path, clock) as gateway:
        missing = gateway.firewall.resume_held(approval_id, call)
        assert outbox_rows(gateway.workspace) == []
    assert wrong.reason == "approval_arguments_tampered"
    assert missing.reason == "approval_key_missing"


def test_the_audit_key_alone_also_seals_the_arguments(
    tmp_path: Path, policy_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PROCTOR_APPROVALS_KEY", raising=False)
    monkeypatch.setenv("PROCTOR_AUDIT_KEY", "audit-secret-" * 4)
    with _gateway(tmp_path, policy_path, clock) as gateway:
        approval_id = _hold(gateway, _email())
        assert SECRET.encode() not in _store_bytes(gateway.state_dir)
        gateway.firewall.approve(approval_id, "bob")
        assert gateway.firewall.resume_held(approval_id, _email()).outcome == "executed"


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_the_store_and_its_side_files_are_owner_only_whatever_the_umask(
    tmp_path: Path, umask: int
) -> None:
    previous = os.umask(umask)
    try:
        with ApprovalStore(tmp_path / "approvals.sqlite") as store:
            store.create(
                run_id="r", call_id="c1", tool="email.send", arguments={"body": BODY},
                arguments_digest="sha256:" + "a" * 64, principal=ANN,
                policy_digest="sha256:" + "p" * 64, rule_ids=("hold",), reason="rule:hold",
                risk="high",
            )  # fmt: skip
            files = sorted(tmp_path.glob("approvals.sqlite*"))
            assert {f.name for f in files} >= {"approvals.sqlite", "approvals.sqlite-wal"}
            for path in files:
                assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name
    finally:
        os.umask(previous)


def test_an_existing_readable_store_is_made_owner_only_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "approvals.sqlite"
    with ApprovalStore(path):
        pass
    os.chmod(path, 0o644)
    with ApprovalStore(path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_store_from_before_sealing_is_sealed_and_redacted_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "approvals.sqlite"
    with ApprovalStore(path) as store:
        rid = store.create(
            run_id="r", call_id="c1", tool="email.send", arguments={"body": "x"},
            arguments_digest="sha256:" + "a" * 64, principal=ANN,
            policy_digest="sha256:" + "p" * 64, rule_ids=("hold",), reason="rule:hold",
            risk="high",
        ).id  # fmt: skip
    conn = sqlite3.connect(path)
    with conn:  # what an older Proctor wrote: raw arguments in the display column, no seal
        conn.execute(
            "UPDATE approvals SET arguments = ?, sealed_arguments = NULL",
            (json.dumps({"body": BODY}),),
        )
    conn.close()
    with ApprovalStore(path, key=b"\x01" * 32) as store:
        request = store.get(rid)
    assert request.arguments == {"body": BODY} and request.arguments_problem is None
    assert SECRET not in json.dumps(request.shown_arguments)
    conn = sqlite3.connect(path)
    (shown, sealed) = conn.execute("SELECT arguments, sealed_arguments FROM approvals").fetchone()
    conn.close()
    assert SECRET not in shown and SECRET not in sealed


def test_the_cli_lists_and_shows_held_calls_without_the_secret(
    gateway: Gateway, policy_path: Path
) -> None:
    approval_id = _hold(gateway, _email())
    state = str(gateway.state_dir)
    gateway.close()
    runner = CliRunner()
    outputs = []
    for args in (
        ["approvals", "list", "--state-dir", state, "--policy", str(policy_path)],
        ["approvals", "list", "--json", "--state-dir", state, "--policy", str(policy_path)],
        ["approvals", "show", approval_id, "--state-dir", state, "--policy", str(policy_path)],
        [
            "approvals", "show", approval_id, "--json", "--state-dir", state,
            "--policy", str(policy_path),
        ],
    ):  # fmt: skip
        result = runner.invoke(cli, args)
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    assert all(SECRET not in out for out in outputs)
    assert "deploy with token" in outputs[3], "the rest of the body is shown, redacted"
