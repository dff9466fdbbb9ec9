"""`proctor audit verify|show` through CliRunner and once as a real process."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from governance.stores._audit import AuditLog
from harness.cli import cli

KEY = "cli-test-key"


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.delenv("PROCTOR_AUDIT_KEY", raising=False)
    return CliRunner()


def build(path: Path, key: bytes | None = None) -> Path:
    with AuditLog(path, key=key) as log:
        for n in range(1, 6):
            log.append("run-1", "executed", {"tool": "fs.read", "n": n, "token": "tok-raw-123"})
        log.append("run-2", "proposed", {"tool": "fs.write"})
    return path


def tamper(path: Path, sql: str) -> None:
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(sql)


def run(runner: CliRunner, *args: str, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(cli, ["audit", *args], env=env)


def test_verify_of_honest_chains_exits_0_and_lists_every_run(
    runner: CliRunner, tmp_path: Path
) -> None:
    db = build(tmp_path / "a.db")
    result = run(runner, "verify", str(db))
    assert result.exit_code == 0, result.output
    assert "run-1" in result.stdout and "run-2" in result.stdout
    assert "BROKEN" not in result.stdout


def test_verify_of_a_tampered_db_exits_1_naming_the_run_seq_and_reason(
    runner: CliRunner, tmp_path: Path
) -> None:
    db = build(tmp_path / "a.db")
    tamper(db, "UPDATE audit_events SET kind = 'forged' WHERE run_id = 'run-1' AND seq = 3")
    result = run(runner, "verify", str(db))
    assert result.exit_code == 1, result.output
    broken = next(line for line in result.stdout.splitlines() if "run-1" in line)
    assert "BROKEN" in broken and " 3 " in broken and "hash mismatch" in broken
    ok_line = next(line for line in result.stdout.splitlines() if "run-2" in line)
    assert "BROKEN" not in ok_line
    assert "1 of 2 chain(s) broken" in result.stderr


def test_verify_exits_1_when_a_keyed_row_is_re_encoded_with_a_duplicate_key(
    runner: CliRunner, tmp_path: Path
) -> None:
    """Python's json reads the last "tool" (the value that was hashed); a first-wins reader
    would read fs.delete. The stored bytes are what the chain authenticates."""
    db = build(tmp_path / "a.db", key=KEY.encode())
    tamper(
        db,
        """UPDATE audit_events SET data = replace(data, '"tool":', '"tool":"fs.delete","tool":')
        WHERE run_id = 'run-1' AND seq = 2""",
    )
    result = run(runner, "verify", str(db), env={"PROCTOR_AUDIT_KEY": KEY})
    assert result.exit_code == 1, result.output
    assert "BROKEN" in result.output and "re-encoded" in result.output
    assert "run-1" in result.output and "1 of 2 chain(s) broken" in result.stderr


def test_verify_json_reports_the_first_bad_seq(runner: CliRunner, tmp_path: Path) -> None:
    db = build(tmp_path / "a.db")
    tamper(db, "DELETE FROM audit_events WHERE run_id = 'run-1' AND seq = 2")
    result = run(runner, "verify", str(db), "--run", "run-1", "--json")
    assert result.exit_code == 1
    [verdict] = json.loads(result.stdout)
    assert verdict["run_id"] == "run-1" and verdict["ok"] is False
    assert verdict["first_bad_seq"] == 2
    assert verdict["reason"] == "seq gap: expected 2, found 3"


def test_verify_of_one_run_ignores_breakage_in_another(runner: CliRunner, tmp_path: Path) -> None:
    db = build(tmp_path / "a.db")
    tamper(db, "UPDATE audit_events SET ts = 'x' WHERE run_id = 'run-1' AND seq = 1")
    assert run(runner, "verify", str(db), "--run", "run-2").exit_code == 0
    assert run(runner, "verify", str(db), "--run", "run-1").exit_code == 1


def test_verify_reads_the_key_from_proctor_audit_key(runner: CliRunner, tmp_path: Path) -> None:
    db = build(tmp_path / "a.db", key=KEY.encode())
    without = run(runner, "verify", str(db))
    assert without.exit_code == 1 and "key missing" in without.stdout
    wrong = run(runner, "verify", str(db), env={"PROCTOR_AUDIT_KEY": "nope"})
    assert wrong.exit_code == 1 and "wrong key" in wrong.stdout
    assert run(runner, "verify", str(db), env={"PROCTOR_AUDIT_KEY": KEY}).exit_code == 0


@pytest.mark.parametrize(
    "args",
    [
        ["verify", "{missing}"],
        ["verify", "{db}", "--run", "no-such-run"],
        ["verify", "{notdb}"],
        ["verify", "{tmp}"],
        ["show", "{db}"],
        ["show", "{db}", "--run", "no-such-run"],
        ["show", "{missing}", "--run", "run-1"],
        ["verify", "{db}", "--bogus-flag"],
    ],
    ids=["missing-db", "unknown-run", "not-a-db", "a-directory", "show-without-run",
         "show-unknown-run", "show-missing-db", "bad-flag"],  # fmt: skip
)
def test_usage_errors_exit_64_never_click_2(
    runner: CliRunner, tmp_path: Path, args: list[str]
) -> None:
    db = build(tmp_path / "a.db")
    notdb = tmp_path / "notes.txt"
    notdb.write_text("not a database\n" * 200)
    paths = {"db": db, "missing": tmp_path / "missing.db", "notdb": notdb, "tmp": tmp_path}
    result = run(runner, *[arg.format(**paths) for arg in args])
    assert result.exit_code == 64, result.output
    assert "Error" in result.stderr


def test_verify_never_writes_to_the_file_it_checks(runner: CliRunner, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as conn, conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    before = other.read_bytes()
    assert run(runner, "verify", str(other)).exit_code == 64
    assert other.read_bytes() == before


def test_verify_of_an_empty_log_says_so_and_exits_0(runner: CliRunner, tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    AuditLog(db).close()
    result = run(runner, "verify", str(db))
    assert result.exit_code == 0
    assert "no audit events" in result.stdout


def test_show_prints_events_in_seq_order_with_redacted_data(
    runner: CliRunner, tmp_path: Path
) -> None:
    db = build(tmp_path / "a.db")
    result = run(runner, "show", str(db), "--run", "run-1")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if "executed" in line]
    assert [line.split()[0] for line in lines] == ["1", "2", "3", "4", "5"]
    assert "tok-raw-123" not in result.stdout and "[REDACTED]" in result.stdout
    assert "fs.write" not in result.stdout, "another run's events are not shown"


def test_show_json_is_the_stored_events(runner: CliRunner, tmp_path: Path) -> None:
    db = build(tmp_path / "a.db")
    result = run(runner, "show", str(db), "--run", "run-2", "--json")
    assert result.exit_code == 0
    [event] = json.loads(result.stdout)
    assert (event["seq"], event["kind"], event["data"]) == (1, "proposed", {"tool": "fs.write"})
    assert event["hash"].startswith("sha256:")


def test_show_of_a_row_with_garbled_data_exits_1_and_points_at_verify(
    runner: CliRunner, tmp_path: Path
) -> None:
    db = build(tmp_path / "a.db")
    tamper(db, "UPDATE audit_events SET data = 'garbled' WHERE run_id = 'run-1' AND seq = 2")
    result = run(runner, "show", str(db), "--run", "run-1")
    assert result.exit_code == 1
    assert "seq 2" in result.stderr and "proctor audit verify" in result.stderr
    verified = run(runner, "verify", str(db))
    assert verified.exit_code == 1 and "data is not valid JSON" in verified.stdout


@pytest.mark.slow
def test_verify_as_a_real_process_exits_1_on_a_tampered_db(tmp_path: Path) -> None:
    db = build(tmp_path / "a.db")
    tamper(db, "UPDATE audit_events SET data = '{}' WHERE run_id = 'run-1' AND seq = 4")
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "audit", "verify", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 1, proc.stderr
    assert "hash mismatch" in proc.stdout and " 4 " in proc.stdout
