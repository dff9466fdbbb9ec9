"""db.query: SQLite itself refuses anything but one bounded read, whatever the policy allowed."""

from __future__ import annotations

import hashlib
import itertools
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from governance.core._contracts import Principal, ToolCall, ToolResult
from governance.tools import Workspace, builtin_tools, database_dump
from governance.tools._local import ToolExecutionError
from governance.tools._readonly_sql import QueryLimits, run_read_only_query

FOREVER = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "ws").ensure()


def frozen_clock() -> float:
    """A clock that never moves: only the step budget can stop a query."""
    return 0.0


def refusal(ws: Workspace, sql: str, **kwargs: Any) -> ToolExecutionError:
    with pytest.raises(ToolExecutionError) as err:
        run_read_only_query(ws.db_path, sql, **kwargs)
    return err.value


def db_query(ws: Workspace, sql: str) -> ToolResult:
    return builtin_tools(ws.root).call(
        ToolCall(
            call_id="c1",
            tool="db.query",
            arguments={"sql": sql},
            run_id="run-1",
            principal=Principal(actor="alice", agent="bot", team="support"),
        )
    )


def fingerprint(ws: Workspace) -> tuple[object, ...]:
    """Everything a write could change: rows, schema, header pragmas and the file's bytes."""
    conn = sqlite3.connect(ws.db_path)
    try:
        schema = conn.execute("SELECT * FROM sqlite_master ORDER BY name").fetchall()
        pragmas = [
            conn.execute(f"PRAGMA {name}").fetchall()
            for name in ("user_version", "application_id", "journal_mode", "page_size")
        ]
    finally:
        conn.close()
    files = sorted(p.name for p in ws.root.iterdir())
    digest = hashlib.sha256(ws.db_path.read_bytes()).hexdigest()
    return database_dump(ws.root), schema, pragmas, files, digest


def test_a_plain_select_returns_its_rows(ws: Workspace) -> None:
    result = run_read_only_query(
        ws.db_path,
        "SELECT o.order_id, upper(o.customer) AS who, count(*) OVER () AS n FROM orders AS o "
        "WHERE o.total > 100 ORDER BY o.total DESC LIMIT 2",
    )
    assert result == {
        "columns": ["order_id", "who", "n"],
        "rows": [["ORD-0006", "BARBARA LISKOV", 4], ["ORD-0003", "ALAN TURING", 4]],
        "truncated": False,
    }


def test_the_schema_can_be_read_from_sqlite_master(ws: Workspace) -> None:
    result = run_read_only_query(
        ws.db_path, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
    )
    assert result["rows"] == [["orders"], ["outbox"], ["refund_drafts"], ["tickets"]]


def test_a_runaway_recursive_cte_is_stopped_by_the_step_budget(ws: Workspace) -> None:
    err = refusal(
        ws,
        FOREVER + "SELECT count(*) FROM r",
        limits=QueryLimits(max_steps=200_000),
        clock=frozen_clock,
    )
    assert err.reason == "query_timeout"
    assert "200,000 SQLite VM steps" in err.message


def test_the_default_step_budget_stops_a_runaway_query(ws: Workspace) -> None:
    err = refusal(ws, FOREVER + "SELECT count(*) FROM r", clock=frozen_clock)
    assert (err.reason, "VM steps" in err.message) == ("query_timeout", True)


def test_a_query_past_the_deadline_is_stopped(ws: Workspace) -> None:
    ticks = itertools.count(step=0.25)  # each look at the clock is a quarter second later

    def clock() -> float:
        return next(ticks)

    err = refusal(
        ws,
        FOREVER + "SELECT count(*) FROM r",
        limits=QueryLimits(max_steps=10**12, deadline_s=1.0),
        clock=clock,
    )
    assert (err.reason, "1 s deadline" in err.message) == ("query_timeout", True)


def test_the_timeout_reason_reaches_the_tool_result(ws: Workspace) -> None:
    result = db_query(ws, FOREVER + "SELECT count(*) FROM r")
    assert (result.outcome, result.reason) == ("failed", "query_timeout")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT hex(zeroblob(1e8))",
        "SELECT length(zeroblob(100000000))",
        "SELECT randomblob(100000000)",
        "SELECT length(CAST(zeroblob(1e8) AS TEXT))",
    ],
)
def test_blob_generators_are_refused_before_they_allocate(ws: Workspace, sql: str) -> None:
    err = refusal(ws, sql)
    assert err.reason == "query_not_allowed"


@pytest.mark.parametrize(
    "sql",
    [
        "WITH RECURSIVE r(x) AS (SELECT 'ab' UNION ALL SELECT x || x FROM r "
        "WHERE length(x) < 100000000) SELECT max(length(x)) FROM r",
        "SELECT length(replace(printf('%.*c', 200000, 'x'), 'x', 'xx'))",
        "SELECT length(group_concat(printf('%.*c', 100000, 'x'))) FROM orders",
        "SELECT length(printf('%.*c', 200000, 'x') || printf('%.*c', 200000, 'x'))",
        "SELECT length(" + " || ".join(["printf('%.*c', 100000, 'x')"] * 3) + ")",
    ],
)
def test_a_value_over_the_size_limit_is_refused(ws: Workspace, sql: str) -> None:
    err = refusal(ws, sql)
    assert err.reason == "query_too_big"
    assert "262,144-byte limit" in err.message


def test_printf_cannot_build_a_string_over_the_limit(ws: Workspace) -> None:
    # SQLite's printf returns NULL rather than a string past SQLITE_LIMIT_LENGTH.
    result = run_read_only_query(ws.db_path, "SELECT printf('%.*c', 100000000, 'x')")
    assert result["rows"] == [[None]]


@pytest.mark.parametrize(
    "statement",
    [
        "ATTACH DATABASE '{path}' AS evil",
        "ATTACH 'file:{path}?mode=rwc' AS evil",
        "VACUUM INTO '{path}'",
        "VACUUM main INTO '{path}'",
    ],
)
def test_attach_and_vacuum_into_create_no_file(
    ws: Workspace, tmp_path: Path, statement: str
) -> None:
    target = tmp_path / "elsewhere" / "copy.sqlite"
    target.parent.mkdir()
    err = refusal(ws, statement.format(path=target.as_posix()))
    assert err.reason == "query_not_allowed"
    assert "ATTACH" in err.message
    assert list(target.parent.iterdir()) == []


WRITES = [
    "INSERT INTO tickets (title, body, priority) VALUES ('t', 'b', 'low')",
    "INSERT OR REPLACE INTO orders SELECT * FROM orders",
    "REPLACE INTO tickets (id, title, body, priority) VALUES (1, 't', 'b', 'low')",
    "INSERT INTO tickets (id, title, body, priority) VALUES (1, 't', 'b', 'low') "
    "ON CONFLICT (id) DO UPDATE SET title = 'x'",
    "WITH x AS (SELECT 1) INSERT INTO tickets (title, body, priority) SELECT 't', 'b', 'low'",
    "UPDATE orders SET status = 'refunded'",
    "UPDATE orders SET total = 0 RETURNING *",
    "DELETE FROM orders",
    "DELETE FROM orders RETURNING order_id",
    "DROP TABLE orders",
    "ALTER TABLE orders ADD COLUMN x",
    "ALTER TABLE orders RENAME TO o",
    "CREATE TABLE t (x)",
    "CREATE TEMP TABLE t (x)",
    "CREATE TEMPORARY TABLE t AS SELECT * FROM orders",
    "CREATE TEMP VIEW v AS SELECT 1",
    "CREATE TEMP TRIGGER tr AFTER INSERT ON orders BEGIN SELECT 1; END",
    "CREATE INDEX i ON orders (total)",
    "CREATE VIRTUAL TABLE v USING json_each",
    "PRAGMA writable_schema = ON",
    "PRAGMA query_only = OFF",
    "PRAGMA journal_mode = DELETE",
    "PRAGMA user_version = 7",
    "PRAGMA main.application_id = 7",
    "PRAGMA integrity_check",
    "SELECT * FROM pragma_table_info('orders')",
    "BEGIN IMMEDIATE",
    "SAVEPOINT s",
    "ANALYZE",
    "REINDEX",
    "VACUUM",
    "DETACH DATABASE temp",
    "SELECT load_extension('/tmp/evil.so')",
    "SELECT sqlite_compileoption_get(0)",
    "EXPLAIN DELETE FROM orders",
]


@pytest.mark.parametrize("sql", WRITES)
def test_every_form_of_write_is_refused_and_the_database_is_unchanged(
    ws: Workspace, sql: str
) -> None:
    before = fingerprint(ws)
    err = refusal(ws, sql)
    assert err.reason == "query_not_allowed"
    assert "SQLite refused" in err.message
    assert fingerprint(ws) == before


def test_the_refusal_reason_reaches_the_tool_result(ws: Workspace) -> None:
    result = db_query(ws, "DELETE FROM orders")
    assert (result.outcome, result.reason) == ("failed", "query_not_allowed")
    assert "DELETE orders" in (result.error or "")
    assert len(database_dump(ws.root)["orders"]) == 8


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT 1" + " + 1" * 150, "Expression tree is too large"),
        ("SELECT 1" + " UNION ALL SELECT 1" * 60, "too many terms in compound SELECT"),
    ],
)
def test_oversized_parse_trees_are_refused(ws: Workspace, sql: str, message: str) -> None:
    err = refusal(ws, sql)
    assert err.reason == "query_failed" and message in err.message


def test_rows_past_the_cap_are_not_fetched(ws: Workspace) -> None:
    # An endless result: reading past 50 rows would run into the step budget.
    result = run_read_only_query(ws.db_path, FOREVER + "SELECT n FROM r", clock=frozen_clock)
    assert result["rows"] == [[n] for n in range(1, 51)]
    assert result["truncated"] is True


def test_the_result_is_cut_at_the_character_cap(ws: Workspace) -> None:
    result = run_read_only_query(
        ws.db_path, FOREVER + "SELECT n, printf('%.*c', 1000, 'x') AS pad FROM r"
    )
    sizes = [len(c) if isinstance(c, str) else len(str(c)) for r in result["rows"] for c in r]
    assert result["truncated"] is True
    assert len(result["rows"]) == 20  # 19 whole rows of ~1,002 characters, then a cut one
    assert sum(sizes) == 20_000 - len("n") - len("pad")


def test_one_huge_cell_is_cut_to_the_character_cap(ws: Workspace) -> None:
    result = run_read_only_query(ws.db_path, "SELECT printf('%.*c', 200000, 'x') AS big")
    assert result["truncated"] is True
    assert result["rows"] == [["x" * (20_000 - len("big"))]]


def test_blobs_and_infinities_come_back_as_text(ws: Workspace) -> None:
    result = db_query(ws, "SELECT X'00FF' AS b, 1e999 AS inf, -1e999 AS ninf")
    assert result.ok
    assert '"rows": [["X\'00FF\'", "inf", "-inf"]]' in result.output
