"""The gateway signs checkpoints of its own audit log: every N events and when it closes."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from governance import Principal, ToolCall
from governance._gateway import Gateway
from governance.core._clock import ManualClock
from governance.stores import (
    AuditLog,
    CheckpointError,
    CheckpointKeyError,
    CheckpointSchedule,
    checkpoint_schedule_from_env,
    generate_checkpoint_keys,
    read_checkpoint,
    verify_checkpoint,
)

POLICY = """
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - {id: read, effect: allow, match: {tool: fs.read}}
"""
KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))


def _gateway(tmp_path: Path, schedule: CheckpointSchedule | None) -> Gateway:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    return Gateway(
        state_dir=tmp_path / "state",
        policy_path=policy,
        clock=ManualClock(),
        audit_key_from_env=False,
        checkpoint=schedule,
    )


def _read(n: int) -> ToolCall:
    return ToolCall(
        f"c{n}", "fs.read", {"path": "notes/todo.txt"}, "run-1", Principal("a", "b", "c")
    )


def _events(gateway: Gateway) -> int:
    return len(gateway.audit.events("run-1"))


def test_a_checkpoint_exists_once_n_events_were_written_and_covers_them(tmp_path: Path) -> None:
    out = tmp_path / "anchors" / "audit.checkpoint.json"
    out.parent.mkdir()
    every = 10
    with _gateway(tmp_path, CheckpointSchedule(out, KEY, every=every, on_close=False)) as gateway:
        calls = 0
        while True:
            calls += 1
            assert gateway.firewall.call(_read(calls)).outcome == "executed"
            if _events(gateway) >= every:
                break
            assert not out.exists()  # fewer than N events so far: no checkpoint yet
        assert out.exists()
        body = read_checkpoint(out, KEY.public_key())
        assert every <= body.runs["run-1"].events <= _events(gateway)
        assert gateway.checkpoints is not None and gateway.checkpoints.errors == []
    with AuditLog(tmp_path / "state" / "audit.sqlite", readonly=True) as log:
        assert verify_checkpoint(out, log, KEY.public_key()).ok


def test_closing_the_gateway_checkpoints_every_event_it_wrote(tmp_path: Path) -> None:
    out = tmp_path / "cp.json"
    with _gateway(tmp_path, CheckpointSchedule(out, KEY)) as gateway:
        gateway.firewall.call(_read(1))
        gateway.firewall.call(_read(2))
        assert not out.exists()  # no `every`: only on close
        written = _events(gateway)
    body = read_checkpoint(out, KEY.public_key())
    assert body.runs["run-1"].events == written


def test_a_checkpoint_that_cannot_be_written_is_reported_and_does_not_stop_the_call(
    tmp_path: Path,
) -> None:
    out = tmp_path / "missing-dir" / "cp.json"
    with _gateway(tmp_path, CheckpointSchedule(out, KEY, every=1, on_close=False)) as gateway:
        assert gateway.firewall.call(_read(1)).outcome == "executed"
        assert gateway.checkpoints is not None
        assert gateway.checkpoints.errors and str(out) in gateway.checkpoints.errors[0]
    assert not out.exists()


def test_without_a_schedule_the_gateway_writes_no_checkpoint(tmp_path: Path) -> None:
    with _gateway(tmp_path, None) as gateway:
        gateway.firewall.call(_read(1))
        assert gateway.checkpoints is None
    assert [p.name for p in tmp_path.rglob("*checkpoint*")] == []


def test_the_environment_names_file_key_and_interval(tmp_path: Path) -> None:
    generate_checkpoint_keys(tmp_path / "ck", tmp_path / "ck.pub")
    env = {
        "PROCTOR_CHECKPOINT_FILE": str(tmp_path / "cp.json"),
        "PROCTOR_CHECKPOINT_KEY": str(tmp_path / "ck"),
        "PROCTOR_CHECKPOINT_EVERY": "50",
    }
    schedule = checkpoint_schedule_from_env(env)
    assert schedule is not None and schedule.every == 50 and schedule.path == tmp_path / "cp.json"
    assert checkpoint_schedule_from_env({}) is None


def test_a_checkpoint_file_without_a_key_refuses_to_start(tmp_path: Path) -> None:
    with pytest.raises(CheckpointKeyError, match="refusing to write unsigned"):
        checkpoint_schedule_from_env({"PROCTOR_CHECKPOINT_FILE": str(tmp_path / "cp.json")})


@pytest.mark.parametrize("every", ["0", "-3", "ten", "1.5"])
def test_a_bad_interval_refuses_to_start(tmp_path: Path, every: str) -> None:
    generate_checkpoint_keys(tmp_path / "ck", tmp_path / "ck.pub")
    env = {
        "PROCTOR_CHECKPOINT_FILE": str(tmp_path / "cp.json"),
        "PROCTOR_CHECKPOINT_KEY": str(tmp_path / "ck"),
        "PROCTOR_CHECKPOINT_EVERY": every,
    }
    with pytest.raises(CheckpointError, match="PROCTOR_CHECKPOINT_EVERY"):
        checkpoint_schedule_from_env(env)


def test_a_gateway_never_signs_over_a_log_truncated_since_its_last_checkpoint(
    tmp_path: Path,
) -> None:
    # The attack: whoever can write the database deletes anchored events and waits for the
    # next scheduled checkpoint to anchor the result. The old checkpoint must survive.
    import sqlite3
    from contextlib import closing

    out = tmp_path / "cp.json"
    with _gateway(tmp_path, CheckpointSchedule(out, KEY)) as gateway:
        gateway.firewall.call(_read(1))
        gateway.firewall.call(_read(2))
    anchored = out.read_bytes()
    db = tmp_path / "state" / "audit.sqlite"
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM audit_events WHERE run_id = 'run-1' AND seq > 3")
    with _gateway(tmp_path, CheckpointSchedule(out, KEY, every=1)) as gateway:
        assert gateway.firewall.call(_read(3)).outcome == "executed"  # calls go on...
        assert gateway.checkpoints is not None
        errors = list(gateway.checkpoints.errors)
    assert errors and "run-1: truncated" in errors[0]  # ...the refusal is reported...
    assert out.read_bytes() == anchored  # ...and the evidence is kept
    with AuditLog(db, readonly=True) as log:
        assert not verify_checkpoint(out, log, KEY.public_key()).ok
