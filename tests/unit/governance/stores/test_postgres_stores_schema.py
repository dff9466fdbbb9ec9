"""The PostgreSQL approval store and audit log open only a database at the code's schema
version, and the audit table is append-only in the server itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from governance.core._errors import AuditWriteError
from governance.stores._approvals import ApprovalStoreError
from governance.stores._approvals_postgres import PostgresApprovalStore
from governance.stores._audit_postgres import PostgresAuditLog
from governance.stores._postgres import PostgresTarget
from governance.stores._postgres_schema import MIGRATIONS, latest_version, migrate

OPENERS: list[tuple[Callable[[PostgresTarget], Any], type[Exception]]] = [
    (PostgresApprovalStore, ApprovalStoreError),
    (PostgresAuditLog, AuditWriteError),
]


@pytest.mark.parametrize(("opener", "error"), OPENERS)
def test_a_store_refuses_a_database_never_migrated_and_creates_nothing(
    postgres_url: str, opener: Callable[[PostgresTarget], Any], error: type[Exception]
) -> None:
    with pytest.raises(error, match="run `proctor store migrate"):
        opener(PostgresTarget(postgres_url))
    with psycopg.connect(postgres_url) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone()
    assert tables == (0,)


@pytest.mark.parametrize(("opener", "error"), OPENERS)
def test_a_store_refuses_a_database_newer_than_the_code(
    postgres_url: str, opener: Callable[[PostgresTarget], Any], error: type[Exception]
) -> None:
    migrate(PostgresTarget(postgres_url))
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO proctor_schema (version, description) VALUES (%s, 'from the future')",
            (latest_version() + 1,),
        )
    with pytest.raises(error, match="newer than this Proctor knows"):
        opener(PostgresTarget(postgres_url))


def test_the_migrations_create_the_approval_and_audit_tables(postgres_url: str) -> None:
    result = migrate(PostgresTarget(postgres_url))
    assert result.after == latest_version() and len(result.applied) == len(MIGRATIONS)
    with psycopg.connect(postgres_url) as conn:
        for table in ("approvals", "audit_events"):
            assert conn.execute("SELECT to_regclass(%s)", (table,)).fetchone() != (None,)


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE audit_events SET data = '{}'",
        "UPDATE audit_events SET seq = seq + 1",
        "DELETE FROM audit_events",
        "TRUNCATE audit_events",
    ],
)
def test_the_server_refuses_to_rewrite_or_remove_audit_events(
    postgres_url: str, statement: str
) -> None:
    migrate(PostgresTarget(postgres_url))
    with PostgresAuditLog(PostgresTarget(postgres_url), key=b"k") as log:
        log.append_many("run-1", [("step", {"n": 1}), ("step", {"n": 2})])
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
                conn.execute(statement)
        verdict = log.verify("run-1")
        assert (verdict.ok, verdict.events) == (True, 2)
