"""Versioned schema of the PostgreSQL store, applied by `proctor store migrate`.

Each migration is a version number and the statements that take the database from the previous
version to it. Every missing migration is applied in ONE transaction with its version rows,
under an advisory lock (PostgreSQL DDL is transactional: a failure leaves the database as it
was; two migrators at once: the second waits, then finds nothing to do). A store refuses to open a
database whose version differs from the code's: older asks for `proctor store migrate`, newer
asks for a newer Proctor (never a silent write to a schema this code does not know).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from governance.core._errors import GovernanceError
from governance.stores._budgets_postgres_ddl import BUDGETS_DDL
from governance.stores._postgres import (
    PostgresTarget,
    PostgresUnavailable,
    connect,
    first_line,
    psycopg,
)

# An arbitrary constant: the advisory lock key every migrator takes.
_MIGRATION_LOCK: Final = 0x50524F43  # "PROC"


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]


_VERSION_TABLE: Final = """
CREATE TABLE IF NOT EXISTS proctor_schema (
    version INTEGER PRIMARY KEY,
    description TEXT NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)
"""

# The SQLite stores' tables, column for column (rows read back through the same parsers).
# Times are fixed-width UTC text (governance.stores._sqlite.utc_text) compared as text, so they
# and run ids sort bytewise (COLLATE "C"), as SQLite sorts them, whatever the database's locale.
APPROVALS_DDL: Final = (
    """
    CREATE TABLE approvals (
        seq BIGINT PRIMARY KEY CHECK (seq > 0),
        id TEXT NOT NULL UNIQUE,
        run_id TEXT COLLATE "C" NOT NULL,
        call_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL,
        arguments_digest TEXT NOT NULL,
        actor TEXT NOT NULL,
        agent TEXT NOT NULL,
        team TEXT NOT NULL,
        policy_digest TEXT NOT NULL,
        rule_ids TEXT NOT NULL,
        reason TEXT NOT NULL,
        risk TEXT NOT NULL,
        status TEXT NOT NULL
            CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'cancelled')),
        created_at TEXT COLLATE "C" NOT NULL,
        expires_at TEXT COLLATE "C" NOT NULL,
        decided_by TEXT,
        decided_at TEXT COLLATE "C",
        comment TEXT,
        approved_arguments TEXT,
        status_reason TEXT,
        consumed INTEGER NOT NULL DEFAULT 0 CHECK (consumed IN (0, 1)),
        waiter TEXT,
        sealed_arguments TEXT,
        sealed_approved_arguments TEXT,
        in_flight TEXT,
        in_flight_by TEXT,
        in_doubt TEXT,
        CHECK (consumed = 0 OR status = 'approved')
    )
    """,
    "CREATE INDEX approvals_by_status ON approvals (status, expires_at)",
    "CREATE INDEX approvals_by_run ON approvals (run_id, seq)",
)

# Append-only in the database itself: an UPDATE, DELETE or TRUNCATE of an event is refused by
# the server, whoever sends it (a role that owns the table can still drop the triggers: grant
# the gateways INSERT and SELECT only; `proctor audit verify` finds any rewrite).
AUDIT_DDL: Final = (
    """
    CREATE TABLE audit_events (
        run_id TEXT COLLATE "C" NOT NULL,
        seq BIGINT NOT NULL CHECK (seq > 0),
        kind TEXT NOT NULL,
        ts TEXT NOT NULL,
        data TEXT NOT NULL,
        alg TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    )
    """,
    """
    CREATE FUNCTION proctor_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'audit_events is append-only: % refused', TG_OP
            USING ERRCODE = 'insufficient_privilege';
    END
    $$
    """,
    "CREATE TRIGGER audit_events_never_changed BEFORE UPDATE OR DELETE ON audit_events "
    "FOR EACH ROW EXECUTE FUNCTION proctor_audit_append_only()",
    "CREATE TRIGGER audit_events_never_truncated BEFORE TRUNCATE ON audit_events "
    "FOR EACH STATEMENT EXECUTE FUNCTION proctor_audit_append_only()",
)

# The audit log's identity (governance.stores._checkpoint_identity): one row, created by the
# first checkpoint, so a checkpoint names the database it anchors whichever gateway wrote it.
AUDIT_IDENTITY_DDL: Final = (
    """
    CREATE TABLE audit_log_identity (
        singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
        log_id TEXT NOT NULL
    )
    """,
)

# Every gateway process holding the approval store open: a random id and a lease it renews,
# judged by the server's clock. A request whose waiter's lease lapsed has no waiter left.
INSTANCES_DDL: Final = (
    """
    CREATE TABLE proctor_instances (
        instance_id TEXT PRIMARY KEY,
        lease_until TIMESTAMPTZ NOT NULL
    )
    """,
)

# Append only: a released migration is never edited (a database may already be at it).
MIGRATIONS: Final[tuple[Migration, ...]] = (
    Migration(1, "budgets", BUDGETS_DDL),
    Migration(2, "approvals", APPROVALS_DDL),
    Migration(3, "audit", AUDIT_DDL),
    Migration(4, "audit log identity", AUDIT_IDENTITY_DDL),
    Migration(5, "gateway instance leases", INSTANCES_DDL),
)


class StoreSchemaError(GovernanceError):
    """The database's schema is not the one this code speaks; the message says what to run."""


@dataclass(frozen=True, slots=True)
class MigrationResult:
    before: int
    after: int
    applied: tuple[Migration, ...]


def latest_version(migrations: Sequence[Migration] = MIGRATIONS) -> int:
    return migrations[-1].version if migrations else 0


def current_version(conn: Any) -> int:
    """The database's version: 0 for a database Proctor never migrated."""
    row = conn.execute("SELECT to_regclass('proctor_schema') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return 0
    found = conn.execute("SELECT coalesce(max(version), 0) FROM proctor_schema").fetchone()
    return int(found[0]) if found else 0


def require_current(
    conn: Any, target: PostgresTarget, migrations: Sequence[Migration] = MIGRATIONS
) -> None:
    """Refuse a database this code does not speak (before any store reads or writes it)."""
    have, want = current_version(conn), latest_version(migrations)
    if have == want:
        return
    if have > want:
        raise StoreSchemaError(
            f"the PostgreSQL store {target.display} is at schema version {have}, newer than "
            f"this Proctor knows (up to {want}): upgrade Proctor; nothing was written"
        )
    raise StoreSchemaError(
        f"the PostgreSQL store {target.display} is at schema version {have}, this Proctor "
        f"needs {want}: run `proctor store migrate --store <url>` (or with PROCTOR_STORE_URL "
        "set); nothing was written"
    )


def migrate(
    target: PostgresTarget, migrations: Sequence[Migration] = MIGRATIONS
) -> MigrationResult:
    """Apply every migration the database lacks, all in one transaction."""
    _check_sequence(migrations)
    driver = psycopg()
    conn = connect(target)
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            conn.execute(_VERSION_TABLE)
            before = current_version(conn)
            want = latest_version(migrations)
            if before > want:
                raise StoreSchemaError(
                    f"the PostgreSQL store {target.display} is at schema version {before}, "
                    f"newer than this Proctor knows (up to {want}): upgrade Proctor; "
                    "nothing was changed"
                )
            applied = tuple(m for m in migrations if m.version > before)
            for migration in applied:
                for statement in migration.statements:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO proctor_schema (version, description) VALUES (%s, %s)",
                    (migration.version, migration.description),
                )
        return MigrationResult(before, latest_version(migrations) if applied else before, applied)
    except driver.Error as exc:
        raise PostgresUnavailable(
            f"migrating the PostgreSQL store {target.display} failed; nothing was changed: "
            f"{first_line(exc, target)}"
        ) from exc
    finally:
        conn.close()


@dataclass(frozen=True, slots=True)
class SchemaStatus:
    """Where a database stands: its version, the code's, and what `migrate` would apply."""

    current: int
    latest: int
    pending: tuple[Migration, ...]

    @property
    def newer(self) -> bool:
        return self.current > self.latest


def schema_status(
    target: PostgresTarget, migrations: Sequence[Migration] = MIGRATIONS
) -> SchemaStatus:
    """Read the database's version; writes nothing (PostgresUnavailable when unreadable)."""
    driver = psycopg()
    conn = connect(target)
    try:
        have = current_version(conn)
    except driver.Error as exc:
        raise PostgresUnavailable(
            f"cannot read the PostgreSQL store {target.display}: {first_line(exc, target)}"
        ) from exc
    finally:
        conn.close()
    pending = tuple(m for m in migrations if m.version > have)
    return SchemaStatus(have, latest_version(migrations), pending)


def _check_sequence(migrations: Sequence[Migration]) -> None:
    versions = [m.version for m in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise ValueError(f"migrations must be numbered 1, 2, 3, ... in order, not {versions}")
