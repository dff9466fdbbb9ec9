"""`proctor audit verify|show --store` with a SQLite store URL: the store's audit.sqlite."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner

from governance.stores._audit import AuditLog
from harness.cli import cli


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    for name in ("PROCTOR_AUDIT_KEY", "PROCTOR_STORE_URL", "PROCTOR_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    return CliRunner()


def _store(directory: Path) -> Path:
    directory.mkdir(parents=True)
    with AuditLog(directory / "audit.sqlite") as log:
        log.append("run-1", "executed", {"n": 1})
        log.append("run-1", "executed", {"n": 2})
    return directory


def test_a_sqlite_store_url_reads_the_audit_file_in_its_directory(
    runner: CliRunner, tmp_path: Path
) -> None:
    store = _store(tmp_path / "state")
    ok = runner.invoke(cli, ["audit", "verify", "--store", f"sqlite://{store}"])
    assert ok.exit_code == 0 and "run-1" in ok.stdout, ok.output
    with closing(sqlite3.connect(store / "audit.sqlite")) as conn, conn:
        conn.execute("UPDATE audit_events SET kind = 'forged' WHERE seq = 2")
    broken = runner.invoke(cli, ["audit", "verify", "--store", f"sqlite://{store}"])
    assert broken.exit_code == 1 and "BROKEN" in broken.stdout, broken.output


def test_the_plain_sqlite_store_is_the_state_directory_s_log(
    runner: CliRunner, tmp_path: Path
) -> None:
    store = _store(tmp_path / "state")
    shown = runner.invoke(
        cli,
        ["audit", "show", "--run", "run-1"],
        env={"PROCTOR_STORE_URL": "sqlite", "PROCTOR_STATE_DIR": str(store)},
    )
    assert shown.exit_code == 0 and "executed" in shown.stdout, shown.output


def test_a_sqlite_store_without_an_audit_log_is_a_usage_error_naming_the_file(
    runner: CliRunner, tmp_path: Path
) -> None:
    result = runner.invoke(cli, ["audit", "verify", "--store", f"sqlite://{tmp_path}/none"])
    assert result.exit_code == 64
    assert f"{tmp_path}/none/audit.sqlite" in result.output
