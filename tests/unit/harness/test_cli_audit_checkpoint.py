"""`proctor audit keygen|checkpoint` and `audit verify --checkpoint`: output and exit codes.

0 clean (appended events are fine), 1 for any integrity failure (truncated, deleted, rewritten,
forged, wrong key, another log, a checkpoint file that is not one), 64 for what the user must
supply (no key: never an unsigned checkpoint).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from governance.stores import AuditLog
from harness import _exit_codes as codes
from harness.cli import cli


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    for name in ("PROCTOR_AUDIT_KEY", "PROCTOR_CHECKPOINT_KEY", "PROCTOR_CHECKPOINT_PUBLIC_KEY"):
        monkeypatch.delenv(name, raising=False)
    return CliRunner()


def run(runner: CliRunner, *args: str, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(cli, ["audit", *args], env=env)


@pytest.fixture
def setup(runner: CliRunner, tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """(db, checkpoint, private key, public key) of a log checkpointed through the CLI."""
    db = tmp_path / "audit.sqlite"
    with AuditLog(db) as log:
        for n in range(1, 5):
            log.append("run-1", "executed", {"n": n})
        log.append("run-2", "proposed", {"n": 1})
    key, pub = tmp_path / "ck", tmp_path / "ck.pub"
    assert run(runner, "keygen", "--key", str(key)).exit_code == 0
    cp = tmp_path / "anchor" / "cp.json"
    cp.parent.mkdir()
    result = run(runner, "checkpoint", str(db), "--out", str(cp), "--key", str(key))
    assert result.exit_code == codes.OK, result.output
    assert "2 run(s), 5 event(s)" in result.stdout
    return db, cp, key, pub


def verify(runner: CliRunner, db: Path, cp: Path, pub: Path, *extra: str) -> Result:
    return run(runner, "verify", str(db), "--checkpoint", str(cp), "--public-key", str(pub), *extra)


def test_a_clean_log_verifies_against_its_checkpoint_with_exit_0(
    runner: CliRunner, setup: tuple[Path, Path, Path, Path]
) -> None:
    db, cp, _, pub = setup
    result = verify(runner, db, cp, pub)
    assert result.exit_code == codes.OK, result.output
    assert "signature ok" in result.stdout and "verified" in result.stdout


def test_appended_events_pass_and_are_reported(
    runner: CliRunner, setup: tuple[Path, Path, Path, Path]
) -> None:
    db, cp, _, pub = setup
    with AuditLog(db) as log:
        log.append("run-1", "executed", {"n": 5})
    result = verify(runner, db, cp, pub)
    assert result.exit_code == codes.OK, result.output
    assert "appended" in result.stdout and "1 event(s) recorded after it" in result.stdout


@pytest.mark.parametrize(
    ("statement", "status"),
    [
        ("DELETE FROM audit_events WHERE run_id = 'run-1' AND seq = 4", "TRUNCATED"),
        ("DELETE FROM audit_events WHERE run_id = 'run-2'", "DELETED"),
        ("UPDATE audit_events SET data = '{\"n\":9}' WHERE run_id = 'run-1' AND seq = 2", "BROKEN"),
    ],
)
def test_tampering_since_the_checkpoint_exits_1_naming_the_run(
    runner: CliRunner, setup: tuple[Path, Path, Path, Path], statement: str, status: str
) -> None:
    db, cp, _, pub = setup
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(statement)
    result = verify(runner, db, cp, pub)
    assert result.exit_code == codes.CHECK_FAILED, result.output
    assert status in result.stdout
    assert "not as checkpointed" in result.stderr


def test_the_json_verdict_lists_each_run(
    runner: CliRunner, setup: tuple[Path, Path, Path, Path]
) -> None:
    db, cp, _, pub = setup
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM audit_events WHERE run_id = 'run-1' AND seq > 2")
    result = verify(runner, db, cp, pub, "--json")
    assert result.exit_code == codes.CHECK_FAILED
    verdict = json.loads(result.stdout)
    assert verdict["ok"] is False
    assert {r["run_id"]: r["status"] for r in verdict["runs"]} == {
        "run-1": "truncated",
        "run-2": "unchanged",
    }


def test_a_forged_checkpoint_exits_1(
    runner: CliRunner, setup: tuple[Path, Path, Path, Path]
) -> None:
    db, cp, _, pub = setup
    cp.write_text(cp.read_text().replace('\\"events\\":4', '\\"events\\":3'))
    result = verify(runner, db, cp, pub)
    assert result.exit_code == codes.CHECK_FAILED
    assert "altered or forged" in result.stderr


def test_the_wrong_public_key_exits_1(
    runner: CliRunner, setup: tuple[Path, Path, Path, Path], tmp_path: Path
) -> None:
    db, cp, _, _ = setup
    assert run(runner, "keygen", "--key", str(tmp_path / "other")).exit_code == 0
    result = verify(runner, db, cp, tmp_path / "other.pub")
    assert result.exit_code == codes.CHECK_FAILED
    assert "wrong public key" in result.stderr


def test_a_truncated_checkpoint_file_exits_1_naming_the_file(
    runner: CliRunner, setup: tuple[Path, Path, Path, Path]
) -> None:
    db, cp, _, pub = setup
    cp.write_bytes(cp.read_bytes()[:-40])
    result = verify(runner, db, cp, pub)
    assert result.exit_code == codes.CHECK_FAILED
    assert str(cp) in result.stderr and "truncated" in result.stderr


def test_a_checkpoint_of_another_log_exits_1(
    runner: CliRunner, setup: tuple[Path, Path, Path, Path], tmp_path: Path
) -> None:
    _, cp, key, pub = setup
    other = tmp_path / "other.sqlite"
    with AuditLog(other) as log:
        log.append("run-1", "executed", {"n": 1})
    assert (
        run(
            runner, "checkpoint", str(other), "-o", str(tmp_path / "o.json"), "--key", str(key)
        ).exit_code
        == 0
    )
    result = verify(runner, other, cp, pub)
    assert result.exit_code == codes.CHECK_FAILED
    assert "another log" in result.stderr


def test_no_signing_key_means_no_checkpoint_and_a_usage_error(
    runner: CliRunner, setup: tuple[Path, Path, Path, Path], tmp_path: Path
) -> None:
    db = setup[0]
    out = tmp_path / "unsigned.json"
    result = run(runner, "checkpoint", str(db), "--out", str(out))
    assert result.exit_code == codes.USAGE
    assert "refusing to write an unsigned checkpoint" in result.output
    assert not out.exists()


def test_the_signing_key_comes_from_the_environment(
    runner: CliRunner, setup: tuple[Path, Path, Path, Path], tmp_path: Path
) -> None:
    db, _, key, pub = setup
    out = tmp_path / "env.json"
    result = run(
        runner, "checkpoint", str(db), "-o", str(out), env={"PROCTOR_CHECKPOINT_KEY": str(key)}
    )
    assert result.exit_code == codes.OK, result.output
    verified = run(
        runner, "verify", str(db), "--checkpoint", str(out),
        env={"PROCTOR_CHECKPOINT_PUBLIC_KEY": str(pub)},
    )  # fmt: skip
    assert verified.exit_code == codes.OK, verified.output


def test_verify_with_a_checkpoint_but_no_public_key_is_a_usage_error(
    runner: CliRunner, setup: tuple[Path, Path, Path, Path]
) -> None:
    db, cp, _, _ = setup
    result = run(runner, "verify", str(db), "--checkpoint", str(cp))
    assert result.exit_code == codes.USAGE
    assert "public key" in result.output


def test_checkpointing_a_broken_log_exits_1_and_writes_nothing(
    runner: CliRunner, setup: tuple[Path, Path, Path, Path], tmp_path: Path
) -> None:
    db, _, key, _ = setup
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM audit_events WHERE run_id = 'run-1' AND seq = 2")
    out = tmp_path / "broken.json"
    result = run(runner, "checkpoint", str(db), "-o", str(out), "--key", str(key))
    assert result.exit_code == codes.CHECK_FAILED
    assert "broken chain" in result.stderr and not out.exists()


def test_keygen_refuses_to_overwrite_a_key(runner: CliRunner, tmp_path: Path) -> None:
    key = tmp_path / "ck"
    assert run(runner, "keygen", "--key", str(key)).exit_code == codes.OK
    before = key.read_bytes()
    result = run(runner, "keygen", "--key", str(key))
    assert result.exit_code == codes.USAGE and "--force" in result.output
    assert key.read_bytes() == before


def test_truncation_is_caught_by_the_real_command_as_a_process(
    setup: tuple[Path, Path, Path, Path],
) -> None:
    db, cp, _, pub = setup
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM audit_events WHERE run_id = 'run-1' AND seq > 1")
    argv = [sys.executable, "-m", "harness", "audit", "verify", str(db), "--checkpoint", str(cp)]
    env = {"PROCTOR_CHECKPOINT_PUBLIC_KEY": str(pub), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == codes.CHECK_FAILED, done.stderr
    assert "TRUNCATED" in done.stdout


def test_checkpointing_over_a_truncated_log_exits_1_and_keeps_the_old_checkpoint(
    runner: CliRunner, setup: tuple[Path, Path, Path, Path]
) -> None:
    db, cp, key, pub = setup
    anchored = cp.read_bytes()
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM audit_events WHERE run_id = 'run-1' AND seq > 2")
    again = run(runner, "checkpoint", str(db), "--out", str(cp), "--key", str(key))
    assert again.exit_code == codes.CHECK_FAILED, again.output
    assert "run-1: truncated" in again.stderr and "--force" in again.stderr
    assert cp.read_bytes() == anchored
    assert verify(runner, db, cp, pub).exit_code == codes.CHECK_FAILED  # evidence kept
    forced = run(runner, "checkpoint", str(db), "--out", str(cp), "--key", str(key), "--force")
    assert forced.exit_code == codes.OK, forced.output
    assert verify(runner, db, cp, pub).exit_code == codes.OK
