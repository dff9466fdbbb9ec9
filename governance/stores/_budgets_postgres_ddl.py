"""The budget ledger's tables in PostgreSQL: one migration's statements (see
governance.stores._postgres_schema, which numbers it).

The same columns as the SQLite file, and the same evidence rules enforced by the database
itself, whoever connects: ledger rows and resets are never deleted (TRUNCATE included), a
ledger row changes once, from `reserved` to its outcome, and a reset never changes. Ids are
identity columns the database assigns (GENERATED ALWAYS: nobody writes one of their own).
"""

from __future__ import annotations

from typing import Final

from governance.stores._budgets_sql import FIXED_COLUMNS, create_tables

_CHANGED: Final = " OR ".join(f"NEW.{c} IS DISTINCT FROM OLD.{c}" for c in FIXED_COLUMNS)

_LEDGER_TABLE, _RESETS_TABLE = create_tables(
    "CREATE TABLE", "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "BIGINT"
)
BUDGETS_DDL: Final[tuple[str, ...]] = (
    _LEDGER_TABLE,
    "CREATE INDEX budget_ledger_window ON budget_ledger (budget_id, key, created_us)",
    _RESETS_TABLE,
    "CREATE INDEX budget_resets_key ON budget_resets (budget_id, key, id)",
    """
    CREATE FUNCTION proctor_budget_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION USING MESSAGE = TG_ARGV[0], ERRCODE = 'integrity_constraint_violation';
    END
    $$
    """,
    f"""
    CREATE FUNCTION proctor_budget_settled_once() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF OLD.status <> 'reserved' OR NEW.status NOT IN ('executed', 'released', 'unknown')
            OR {_CHANGED} THEN
            RAISE EXCEPTION USING
                MESSAGE = 'a budget ledger row is settled once and only its outcome changes',
                ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END
    $$
    """,
    "CREATE TRIGGER budget_ledger_settled_once BEFORE UPDATE ON budget_ledger "
    "FOR EACH ROW EXECUTE FUNCTION proctor_budget_settled_once()",
    *(
        f"CREATE TRIGGER {table}_never_{verb} BEFORE {event} ON {table} FOR EACH {each} "
        f"EXECUTE FUNCTION proctor_budget_refuse('{message}')"
        for table, verb, event, each, message in (
            ("budget_ledger", "deleted", "DELETE", "ROW",
             "budget ledger rows are evidence and are never deleted"),
            ("budget_ledger", "truncated", "TRUNCATE", "STATEMENT",
             "budget ledger rows are evidence and are never deleted"),
            ("budget_resets", "updated", "UPDATE", "ROW",
             "budget resets are evidence and are never changed"),
            ("budget_resets", "deleted", "DELETE", "ROW",
             "budget resets are evidence and are never deleted"),
            ("budget_resets", "truncated", "TRUNCATE", "STATEMENT",
             "budget resets are evidence and are never deleted"),
        )
    ),  # fmt: skip
)
