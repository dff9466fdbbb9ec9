"""`proctor store migrate|status` and `--store` on the commands that open a gateway, against a
real PostgreSQL server: versions before and after, idempotence, the exit codes of a newer
database (3) and an unreachable server (69), and a password that is never printed."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from governance.stores._postgres_schema import MIGRATIONS, current_version, latest_version
from harness import _exit_codes as codes
from harness.cli._app import cli
from tests.postgres_cluster import PostgresCluster

PASSWORD = "pw-never-shown-7f3a"
UNREACHABLE = f"postgresql://proctor:{PASSWORD}@127.0.0.1:1/nowhere"
POLICY = """
version: 1
rules:
  - {id: delete-notes, effect: allow, match: {tool: fs.delete}}
budgets:
  - {id: one-per-run, scope: agent_run, limit: 1, window_seconds: 3600}
"""


SCRIPT = Path(__file__).resolve().parents[3] / "scenarios" / "scripts" / "refund-over-limit.yaml"


def _with_password(url: str) -> str:
    """The test server trusts every local login: a password in the URL is carried, unused."""
    return url.replace("postgresql://proctor@", f"postgresql://proctor:{PASSWORD}@")


@pytest.fixture
def url(postgres_url: str) -> str:
    return _with_password(postgres_url)


def _proctor(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env={"PROCTOR_STORE_URL": None, **(env or {})})
    assert PASSWORD not in result.stdout + result.stderr
    return result.exit_code, result.stdout, result.stderr


def _version(url: str) -> int:
    with psycopg.connect(url) as conn:
        return current_version(conn)


def test_migrate_prints_before_and_after_and_a_second_run_applies_nothing(url: str) -> None:
    want = latest_version()
    code, out, _ = _proctor("store", "status", "--store", url)
    assert code == codes.OK
    assert f"schema version: 0 (this Proctor: {want})" in out
    assert "would apply: " + ", ".join(f"{m.version} {m.description}" for m in MIGRATIONS) in out

    code, out, _ = _proctor("store", "migrate", "--store", url)
    assert code == codes.OK and f"schema version 0 -> {want} (applied: " in out
    assert "postgresql://proctor@127.0.0.1:" in out  # named, without the password
    assert _version(url) == want

    code, out, _ = _proctor("store", "migrate", env={"PROCTOR_STORE_URL": url})
    assert code == codes.OK and f"schema version {want} -> {want}: already current" in out
    code, out, _ = _proctor("store", "status", "--store", url)
    assert code == codes.OK and "would apply nothing" in out


def test_a_database_newer_than_this_proctor_exits_3_and_is_left_as_it_was(url: str) -> None:
    _proctor("store", "migrate", "--store", url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO proctor_schema (version, description) VALUES (%s, 'from the future')",
            (latest_version() + 1,),
        )
    code, _, err = _proctor("store", "migrate", "--store", url)
    assert code == codes.INVALID_SUITE and "newer than this Proctor knows" in err
    code, _, err = _proctor("store", "status", "--store", url)
    assert code == codes.INVALID_SUITE and "upgrade Proctor" in err
    assert _version(url) == latest_version() + 1


@pytest.mark.parametrize("command", ["migrate", "status"])
def test_an_unreachable_server_exits_69_naming_it_without_its_password(command: str) -> None:
    code, _, err = _proctor("store", command, "--store", UNREACHABLE)
    assert code == codes.UNAVAILABLE
    assert "postgresql://proctor@127.0.0.1:1/nowhere" in err


def test_a_sqlite_store_needs_no_migration_and_a_bad_url_is_a_usage_error() -> None:
    code, out, _ = _proctor("store", "migrate", "--store", "sqlite")
    assert code == codes.OK and "nothing to migrate" in out
    code, _, err = _proctor("store", "status", "--store", "mysql://db/x")
    assert code == codes.USAGE and "not understood" in err


def _gateway_command(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[
    int, str, str
]:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    state = str(tmp_path / "state")
    return _proctor(*args[:2], "--state-dir", state, "--policy", str(policy), *args[2:], env=env)


@pytest.mark.parametrize(
    "command",
    [
        ("budgets", "status"),
        ("approvals", "list"),
        ("ask", "delete notes/todo.txt", "--script", str(SCRIPT)),
    ],
)
def test_a_gateway_on_an_unmigrated_database_refuses_to_start_naming_the_migration(
    tmp_path: Path, url: str, command: tuple[str, ...]
) -> None:
    code, _, err = _gateway_command(tmp_path, *command, "--store", url)
    assert code == codes.INVALID_SUITE
    assert "proctor store migrate" in err
    assert _version(url) == 0, "nothing was created"


def test_a_gateway_on_an_unreachable_server_exits_69_from_the_environment_too(
    tmp_path: Path,
) -> None:
    code, _, err = _gateway_command(
        tmp_path, "budgets", "status", env={"PROCTOR_STORE_URL": UNREACHABLE}
    )
    assert code == codes.UNAVAILABLE and "127.0.0.1:1/nowhere" in err
    assert not (tmp_path / "state" / "budgets.sqlite").exists()


def test_a_store_url_that_names_no_backend_is_a_usage_error_on_gateway_commands(
    tmp_path: Path,
) -> None:
    code, _, err = _gateway_command(tmp_path, "budgets", "status", "--store", "mysql://db/x")
    assert code == codes.USAGE and "--store" in err


def test_budgets_status_and_reset_work_on_what_a_gateway_counted_in_postgres(
    tmp_path: Path, postgres_cluster: PostgresCluster
) -> None:
    url = _with_password(postgres_cluster.create_database())
    assert _proctor("store", "migrate", "--store", url)[0] == codes.OK
    from governance import Principal, ToolCall
    from governance._gateway import Gateway

    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    with Gateway(state_dir=tmp_path / "state", policy_path=policy, store=url) as gateway:
        ann = Principal("ann", "cleaner", "ops")
        gateway.firewall.call(ToolCall("c1", "fs.delete", {"path": "notes/todo.txt"}, "run-1", ann))
    code, out, _ = _gateway_command(tmp_path, "budgets", "status", "--json", "--store", url)
    assert code == codes.OK
    assert [(r["key"], r["used"]) for r in json.loads(out)] == [("run-1", 1)]
    code, _, _ = _gateway_command(
        tmp_path, "budgets", "reset", "--scope", "agent_run", "--key", "run-1", "--reason", "r",
        "--by", "dana", "--approved-by", "erin", "--store", url,
    )  # fmt: skip
    assert code == codes.OK
    code, out, _ = _gateway_command(tmp_path, "budgets", "status", "--json", "--store", url)
    assert [(r["key"], r["used"]) for r in json.loads(out)] == [("run-1", 0)]
    assert not (tmp_path / "state" / "budgets.sqlite").exists()
