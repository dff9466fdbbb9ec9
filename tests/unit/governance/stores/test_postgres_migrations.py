"""`proctor store migrate`'s engine on a real server: versions apply once, in order, all or
nothing; a database newer or older than the code is refused with the command that fixes it."""

from __future__ import annotations

import threading

import psycopg
import pytest

from governance.stores._backends import StoreUrlError, parse_store_url
from governance.stores._postgres import PostgresTarget, PostgresUnavailable
from governance.stores._postgres_schema import (
    Migration,
    StoreSchemaError,
    current_version,
    migrate,
    require_current,
)

TWO = (
    Migration(1, "a table", ("CREATE TABLE one (id INTEGER PRIMARY KEY)",)),
    Migration(2, "another", ("CREATE TABLE two (id INTEGER PRIMARY KEY)",)),
)


def test_a_fresh_database_is_taken_to_the_latest_version_and_a_second_run_does_nothing(
    postgres_url: str,
) -> None:
    target = PostgresTarget(postgres_url)
    first = migrate(target, TWO)
    again = migrate(target, TWO)
    assert (first.before, first.after, [m.version for m in first.applied]) == (0, 2, [1, 2])
    assert (again.before, again.after, again.applied) == (2, 2, ())
    with psycopg.connect(postgres_url) as conn:
        assert current_version(conn) == 2
        require_current(conn, target, TWO)


def test_only_the_missing_versions_are_applied(postgres_url: str) -> None:
    target = PostgresTarget(postgres_url)
    migrate(target, TWO[:1])
    result = migrate(target, TWO)
    assert [m.version for m in result.applied] == [2]


def test_a_failing_migration_leaves_the_database_as_it_was(postgres_url: str) -> None:
    target = PostgresTarget(postgres_url)
    broken = (*TWO, Migration(3, "bad", ("CREATE TABLE three (", )))
    with pytest.raises(PostgresUnavailable, match="nothing was changed"):
        migrate(target, broken)
    with psycopg.connect(postgres_url) as conn:
        assert current_version(conn) == 0
        assert conn.execute("SELECT to_regclass('one')").fetchone() == (None,)


def test_a_database_newer_than_the_code_is_refused_and_left_untouched(postgres_url: str) -> None:
    target = PostgresTarget(postgres_url)
    migrate(target, TWO)
    with pytest.raises(StoreSchemaError, match="newer than this Proctor knows .*upgrade"):
        migrate(target, TWO[:1])
    with psycopg.connect(postgres_url) as conn, pytest.raises(StoreSchemaError, match="newer"):
        require_current(conn, target, TWO[:1])


def test_an_older_database_asks_for_proctor_store_migrate(postgres_url: str) -> None:
    target = PostgresTarget(postgres_url)
    migrate(target, TWO[:1])
    with psycopg.connect(postgres_url) as conn, pytest.raises(
        StoreSchemaError, match="proctor store migrate"
    ):
        require_current(conn, target, TWO)


def test_concurrent_migrators_apply_each_version_once(postgres_url: str) -> None:
    target = PostgresTarget(postgres_url)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            migrate(target, TWO)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT version FROM proctor_schema ORDER BY version").fetchall()
    assert rows == [(1,), (2,)]


def test_an_unreachable_server_is_named_without_its_password() -> None:
    target = PostgresTarget("postgresql://u:hunter2secret@127.0.0.1:1/db")
    with pytest.raises(PostgresUnavailable) as caught:
        migrate(target, TWO)
    assert "127.0.0.1:1/db" in str(caught.value)
    assert "hunter2secret" not in str(caught.value)
    assert "hunter2secret" not in repr(target)


def test_a_postgres_url_parses_to_the_postgres_backend_and_refuses_a_durability() -> None:
    spec = parse_store_url("postgresql://u:pw@db.example:5433/proctor")
    assert spec.kind == "postgres"
    assert spec.display == "postgresql://u@db.example:5433/proctor"
    assert parse_store_url(spec.url) == spec
    with pytest.raises(StoreUrlError, match="synchronous_commit"):
        parse_store_url("postgres://db/x", durability="os")
