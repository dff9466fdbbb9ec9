"""`proctor audit verify|show --store postgresql://...`: the shared server's chains, with the
file form's output and exit codes (0 intact, 1 broken naming the first bad seq), 69 for a
server that cannot be reached, 3 for a database at another schema version, and never the
password of the URL."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner, Result

from governance import ManualClock
from governance.stores import (
    AuditLog,
    PostgresAuditLog,
    PostgresTarget,
    generate_checkpoint_keys,
    migrate_postgres,
)
from harness.cli import cli
from tests.postgres_cluster import PostgresCluster

pytestmark = pytest.mark.slow

KEY = "audit-cli-key"
PASSWORD = "s3cret-pw"  # trust authentication ignores it: it is here to be never printed


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("PROCTOR_AUDIT_KEY", KEY)
    monkeypatch.delenv("PROCTOR_STORE_URL", raising=False)
    return CliRunner()


def _with_password(url: str) -> str:
    return url.replace("postgresql://proctor@", f"postgresql://proctor:{PASSWORD}@")


def _fill(log: object) -> None:
    for n in range(1, 6):
        log.append("run-1", "executed", {"tool": "fs.read", "n": n})  # type: ignore[attr-defined]
    log.append("run-2", "proposed", {"tool": "fs.write"})  # type: ignore[attr-defined]


@pytest.fixture
def store(postgres_cluster: PostgresCluster) -> str:
    """A migrated database holding two runs; its URL with a password."""
    url = postgres_cluster.create_database("audit")
    migrate_postgres(PostgresTarget(url))
    with PostgresAuditLog(PostgresTarget(url), key=KEY.encode(), clock=ManualClock()) as log:
        _fill(log)
    return _with_password(url)


def _tamper(url: str, sql: str) -> None:
    """As the superuser, past the append-only trigger: what a DBA with owner rights could do."""
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute("ALTER TABLE audit_events DISABLE TRIGGER audit_events_never_changed")
        conn.execute(sql)
        conn.execute("ALTER TABLE audit_events ENABLE TRIGGER audit_events_never_changed")


def run(runner: CliRunner, *args: str, env: dict[str, str] | None = None) -> Result:
    result = runner.invoke(cli, ["audit", *args], env=env)
    assert PASSWORD not in result.output + (result.stderr or "")
    return result


def test_verify_of_an_intact_store_prints_what_the_file_form_prints_and_exits_0(
    runner: CliRunner, store: str, tmp_path: Path
) -> None:
    with AuditLog(tmp_path / "a.db", key=KEY.encode(), clock=ManualClock()) as log:
        _fill(log)
    on_file = run(runner, "verify", str(tmp_path / "a.db"))
    on_server = run(runner, "verify", "--store", store)
    assert (on_server.exit_code, on_file.exit_code) == (0, 0), on_server.output
    assert on_server.stdout == on_file.stdout
    assert "run-1" in on_server.stdout and "BROKEN" not in on_server.stdout
    as_json = run(runner, "verify", "--store", store, "--json")
    assert as_json.stdout == run(runner, "verify", str(tmp_path / "a.db"), "--json").stdout


def test_verify_of_a_store_with_a_rewritten_row_exits_1_naming_the_first_bad_seq(
    runner: CliRunner, store: str
) -> None:
    _tamper(store, "UPDATE audit_events SET data = '{\"n\":99}' WHERE run_id = 'run-1' AND seq = 3")
    result = run(runner, "verify", "--store", store)
    assert result.exit_code == 1, result.output
    row = next(line for line in result.stdout.splitlines() if line.startswith("run-1"))
    assert "BROKEN" in row and " 3 " in f"{row} "
    assert "1 of 2 chain(s) broken" in result.stderr
    verdicts = json.loads(run(runner, "verify", "--store", store, "--json").stdout)
    assert [(v["run_id"], v["ok"], v["first_bad_seq"]) for v in verdicts] == [
        ("run-1", False, 3),
        ("run-2", True, None),
    ]
    one = run(runner, "verify", "--store", store, "--run", "run-2")
    assert one.exit_code == 0, one.output


def test_verify_of_a_store_with_a_deleted_row_exits_1(runner: CliRunner, store: str) -> None:
    _tamper(store, "DELETE FROM audit_events WHERE run_id = 'run-1' AND seq = 2")
    result = run(runner, "verify", "--store", store, "--run", "run-1")
    assert result.exit_code == 1, result.output
    assert "BROKEN" in result.stdout


def test_the_store_comes_from_proctor_store_url_and_a_named_file_wins_over_it(
    runner: CliRunner, store: str, tmp_path: Path
) -> None:
    _tamper(store, "UPDATE audit_events SET kind = 'forged' WHERE run_id = 'run-2' AND seq = 1")
    from_env = run(runner, "verify", env={"PROCTOR_STORE_URL": store})
    assert from_env.exit_code == 1, from_env.output
    with AuditLog(tmp_path / "a.db", key=KEY.encode()) as log:
        _fill(log)
    named = run(runner, "verify", str(tmp_path / "a.db"), env={"PROCTOR_STORE_URL": store})
    assert named.exit_code == 0, named.output


def test_show_reads_one_run_of_the_store(runner: CliRunner, store: str) -> None:
    result = run(runner, "show", "--store", store, "--run", "run-1", "--json")
    assert result.exit_code == 0, result.output
    assert [e["seq"] for e in json.loads(result.stdout)] == [1, 2, 3, 4, 5]
    missing = run(runner, "show", "--store", store, "--run", "nope")
    assert missing.exit_code == 64 and "run-1" in missing.output


def test_an_unreachable_server_exits_69_without_its_password(
    runner: CliRunner, postgres_cluster: PostgresCluster
) -> None:
    port = _closed_port()
    url = f"postgresql://proctor:{PASSWORD}@127.0.0.1:{port}/nowhere"
    result = run(runner, "verify", "--store", url)
    assert result.exit_code == 69, result.output
    assert f"127.0.0.1:{port}/nowhere" in result.stderr


def test_a_database_at_another_schema_version_exits_3_naming_the_fix(
    runner: CliRunner, postgres_cluster: PostgresCluster
) -> None:
    url = _with_password(postgres_cluster.create_database("bare"))
    result = run(runner, "verify", "--store", url)
    assert result.exit_code == 3, result.output
    assert "proctor store migrate" in result.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((), "name the audit log"),
        (("--store", "memory:"), "memory store"),
        (("--store", "mysql://x/y"), "not understood"),
    ],
)
def test_a_verify_that_names_no_readable_log_is_a_usage_error(
    runner: CliRunner, args: tuple[str, ...], says: str
) -> None:
    result = run(runner, "verify", *args)
    assert result.exit_code == 64 and says in result.output, result.output


def test_a_file_and_a_store_together_are_a_usage_error(
    runner: CliRunner, store: str, tmp_path: Path
) -> None:
    with AuditLog(tmp_path / "a.db", key=KEY.encode()) as log:
        _fill(log)
    both = run(runner, "verify", str(tmp_path / "a.db"), "--store", store)
    assert both.exit_code == 64 and "not both" in both.output


def test_a_checkpoint_of_the_store_verifies_later_and_shows_a_rewrite_since(
    runner: CliRunner, store: str, tmp_path: Path
) -> None:
    key, public = tmp_path / "ck", tmp_path / "ck.pub"
    generate_checkpoint_keys(key, public)
    checkpoint = tmp_path / "checkpoint.json"
    signed = run(runner, "checkpoint", "--store", store, "-o", str(checkpoint), "--key", str(key))
    assert signed.exit_code == 0, signed.output
    verify = ("verify", "--store", store, "--checkpoint", str(checkpoint), "--public-key",
              str(public))  # fmt: skip
    # Another gateway's log object on the same database appends: fine, and the same log.
    with PostgresAuditLog(PostgresTarget(store), key=KEY.encode()) as log:
        log.append("run-1", "executed", {"n": 6})
    assert run(runner, *verify).exit_code == 0
    _tamper(store, "DELETE FROM audit_events WHERE run_id = 'run-1' AND seq >= 5")
    truncated = run(runner, *verify)
    assert truncated.exit_code == 1, truncated.output
    assert "run-1" in truncated.stdout and "truncated" in truncated.output


def test_a_checkpoint_of_another_database_is_refused_as_another_log(
    runner: CliRunner, store: str, postgres_cluster: PostgresCluster, tmp_path: Path
) -> None:
    key, public = tmp_path / "ck", tmp_path / "ck.pub"
    generate_checkpoint_keys(key, public)
    checkpoint = tmp_path / "checkpoint.json"
    assert run(runner, "checkpoint", "--store", store, "-o", str(checkpoint), "--key",
               str(key)).exit_code == 0  # fmt: skip
    other = postgres_cluster.create_database("other")
    migrate_postgres(PostgresTarget(other))
    with PostgresAuditLog(PostgresTarget(other), key=KEY.encode(), clock=ManualClock()) as log:
        _fill(log)  # the same events: only the identity tells the two logs apart
    own = run(runner, "checkpoint", "--store", other, "-o", str(tmp_path / "other.json"),
              "--key", str(key))  # fmt: skip
    assert own.exit_code == 0, own.output
    result = run(runner, "verify", "--store", other, "--checkpoint", str(checkpoint),
                 "--public-key", str(public))  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "the checkpoint is of log" in result.output
    assert "but this log has identity log-" in result.output  # its own, kept in its database


def test_a_real_process_verifies_the_store_from_the_environment(store: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "audit", "verify"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PROCTOR_STORE_URL": store, "PROCTOR_AUDIT_KEY": KEY},
    )
    assert proc.returncode == 0, proc.stderr
    assert "run-2" in proc.stdout and PASSWORD not in proc.stdout + proc.stderr


def _closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
