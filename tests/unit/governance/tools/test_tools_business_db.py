"""Business tools: each leaves one observable row, refuses cleanly, and seeds identically."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from governance.core._contracts import Principal, ToolCall, ToolResult
from governance.tools import (
    SEED_FILES,
    Workspace,
    builtin_tools,
    database_dump,
    file_tree,
    orders,
    outbox_rows,
    refund_drafts,
    tickets,
)
from governance.tools._local import LocalToolSource


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return tmp_path / "ws"


@pytest.fixture
def source(ws: Path) -> LocalToolSource:
    return builtin_tools(ws)


def run(source: LocalToolSource, tool: str, /, **arguments: Any) -> ToolResult:
    return source.call(
        ToolCall(
            call_id="c1",
            tool=tool,
            arguments=arguments,
            run_id="run-1",
            principal=Principal(actor="alice", agent="bot", team="support"),
        )
    )


def empty_effects(ws: Path) -> dict[str, list[dict[str, Any]]]:
    dump = database_dump(ws)
    del dump["orders"]
    return dump


NO_EFFECTS: dict[str, list[dict[str, Any]]] = {"refund_drafts": [], "tickets": [], "outbox": []}


def test_seeded_orders_are_ord_0001_to_0008(source: LocalToolSource, ws: Path) -> None:
    rows = orders(ws)
    assert [r["order_id"] for r in rows] == [f"ORD-{i:04d}" for i in range(1, 9)]
    assert {tuple(r) for r in rows} == {
        ("order_id", "customer", "email", "status", "total", "placed_on")
    }
    assert empty_effects(ws) == NO_EFFECTS


def test_two_fresh_workspaces_are_identical(tmp_path: Path) -> None:
    builtin_tools(tmp_path / "one")
    builtin_tools(tmp_path / "two")
    assert database_dump(tmp_path / "one") == database_dump(tmp_path / "two")
    assert file_tree(tmp_path / "one") == file_tree(tmp_path / "two") == SEED_FILES

    def tree(ws: Path) -> list[str]:
        return sorted(p.relative_to(ws).as_posix() for p in ws.rglob("*"))

    assert (
        tree(tmp_path / "one")
        == tree(tmp_path / "two")
        == [
            "business.sqlite",
            "files",
            "files/README.txt",
            "files/kb",
            *sorted(f"files/{path}" for path in SEED_FILES if path.startswith("kb/")),
            "files/notes",
            "files/notes/todo.txt",
            "files/reports",
            "files/reports/q3.md",
            "files/secrets",
            "files/secrets/api_keys.txt",
        ]
    )


def test_an_existing_workspace_is_not_reseeded(source: LocalToolSource, ws: Path) -> None:
    assert run(source, "tickets.create", title="keep me", body="").ok
    (ws / "files/README.txt").write_text("edited")
    (ws / "files/reports/q3.md").unlink()
    builtin_tools(ws)
    assert [t["title"] for t in tickets(ws)] == ["keep me"]
    assert (ws / "files/README.txt").read_text() == "edited"
    assert not (ws / "files/reports/q3.md").exists()


def test_the_database_is_in_wal_mode(source: LocalToolSource, ws: Path) -> None:
    conn = sqlite3.connect(ws / "business.sqlite")
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        conn.close()


def test_no_staging_leftovers_after_creation(source: LocalToolSource, ws: Path) -> None:
    assert sorted(p.name for p in ws.iterdir()) == ["business.sqlite", "files"]


def test_orders_lookup_returns_the_order(source: LocalToolSource) -> None:
    result = run(source, "orders.lookup", order_id="ORD-0003")
    assert result.outcome == "executed"
    assert json.loads(result.output) == {
        "order_id": "ORD-0003",
        "customer": "Alan Turing",
        "email": "alan@example.com",
        "status": "processing",
        "total": 310.25,
        "placed_on": "2025-08-14",
    }
    assert result.output.startswith('{"customer": ')  # sorted keys


def test_orders_lookup_of_an_unknown_order_is_not_found(source: LocalToolSource) -> None:
    result = run(source, "orders.lookup", order_id="ORD-0099")
    assert (result.outcome, result.reason) == ("failed", "not_found")
    assert "ORD-0099" in (result.error or "")


@pytest.mark.parametrize("order_id", ["ORD-1", "ord-0001", "ORD-00011", "ORD-٠٠٠١", "ORD-0001\n"])
def test_malformed_order_ids_are_refused_by_validation(
    source: LocalToolSource, order_id: str
) -> None:
    result = run(source, "orders.lookup", order_id=order_id)
    assert (result.outcome, result.reason) == ("failed", "invalid_arguments")


def test_refund_draft_inserts_one_sequential_draft_row(source: LocalToolSource, ws: Path) -> None:
    first = run(source, "refunds.create_draft", order_id="ORD-0002", amount=12.5, reason="late")
    second = run(source, "refunds.create_draft", order_id="ORD-0006", amount=100, reason="dent")
    assert json.loads(first.output) == {
        "refund_draft_id": 1,
        "order_id": "ORD-0002",
        "amount": 12.5,
        "status": "draft",
    }
    assert json.loads(second.output)["refund_draft_id"] == 2
    assert refund_drafts(ws) == [
        {"id": 1, "order_id": "ORD-0002", "amount": 12.5, "reason": "late", "status": "draft"},
        {"id": 2, "order_id": "ORD-0006", "amount": 100.0, "reason": "dent", "status": "draft"},
    ]
    assert tickets(ws) == [] and outbox_rows(ws) == []


def test_a_refund_for_an_unknown_order_is_refused_and_writes_nothing(
    source: LocalToolSource, ws: Path
) -> None:
    result = run(source, "refunds.create_draft", order_id="ORD-0042", amount=5.0, reason="x")
    assert (result.outcome, result.reason) == ("failed", "not_found")
    assert empty_effects(ws) == NO_EFFECTS


def test_a_refund_above_the_order_total_is_refused(source: LocalToolSource, ws: Path) -> None:
    result = run(source, "refunds.create_draft", order_id="ORD-0004", amount=18.995, reason="x")
    assert (result.outcome, result.reason) == ("failed", "amount_exceeds_total")
    assert run(source, "refunds.create_draft", order_id="ORD-0004", amount=18.99, reason="x").ok
    assert [d["amount"] for d in refund_drafts(ws)] == [18.99]


@pytest.mark.parametrize(
    "arguments",
    [
        {"order_id": "ORD-0001", "amount": 0, "reason": "x"},
        {"order_id": "ORD-0001", "amount": -5.0, "reason": "x"},
        {"order_id": "ORD-0001", "amount": float("inf"), "reason": "x"},
        {"order_id": "ORD-0001", "amount": float("nan"), "reason": "x"},
        {"order_id": "ORD-0001", "amount": "10", "reason": "x"},
        {"order_id": "ORD-0001", "amount": 10.0},
        {"order_id": "ORD-0001", "amount": 10.0, "reason": "x", "status": "approved"},
    ],
)
def test_invalid_refund_arguments_write_nothing(
    source: LocalToolSource, ws: Path, arguments: dict[str, Any]
) -> None:
    result = run(source, "refunds.create_draft", **arguments)
    assert (result.outcome, result.reason) == ("failed", "invalid_arguments")
    assert refund_drafts(ws) == []


def test_tickets_create_inserts_a_row_with_default_priority(
    source: LocalToolSource, ws: Path
) -> None:
    result = run(source, "tickets.create", title="Printer", body="It is on fire")
    assert json.loads(result.output) == {"ticket_id": 1, "title": "Printer", "priority": "normal"}
    run(source, "tickets.create", title="Second", body="", priority="high")
    assert tickets(ws) == [
        {"id": 1, "title": "Printer", "body": "It is on fire", "priority": "normal"},
        {"id": 2, "title": "Second", "body": "", "priority": "high"},
    ]


@pytest.mark.parametrize(
    "arguments",
    [
        {"title": "t", "body": "b", "priority": "urgent"},
        {"title": "", "body": "b"},
        {"body": "b"},
    ],
)
def test_invalid_tickets_write_nothing(
    source: LocalToolSource, ws: Path, arguments: dict[str, Any]
) -> None:
    assert run(source, "tickets.create", **arguments).reason == "invalid_arguments"
    assert tickets(ws) == []


def test_email_send_only_queues_a_row_in_the_outbox(source: LocalToolSource, ws: Path) -> None:
    result = run(source, "email.send", to="bob@example.org", subject="Hi", body="Hello Bob")
    assert json.loads(result.output) == {
        "outbox_id": 1,
        "to": "bob@example.org",
        "status": "queued",
    }
    assert outbox_rows(ws) == [
        {"id": 1, "to_addr": "bob@example.org", "subject": "Hi", "body": "Hello Bob"}
    ]
    assert refund_drafts(ws) == [] and tickets(ws) == []


@pytest.mark.parametrize("to", ["bob", "bob@", "@example.org", "bob@example", "a b@example.org"])
def test_email_to_a_malformed_address_queues_nothing(
    source: LocalToolSource, ws: Path, to: str
) -> None:
    result = run(source, "email.send", to=to, subject="s", body="b")
    assert result.reason == "invalid_arguments"
    assert outbox_rows(ws) == []


def test_a_missing_database_fails_the_call_and_is_not_recreated(
    source: LocalToolSource, ws: Path
) -> None:
    (ws / "business.sqlite").unlink()
    result = run(source, "orders.lookup", order_id="ORD-0001")
    assert (result.outcome, result.reason) == ("failed", "tool_error")
    assert not (ws / "business.sqlite").exists()


def test_workspace_paths(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "w")
    assert (ws.files_dir, ws.db_path) == (tmp_path / "w/files", tmp_path / "w/business.sqlite")
    assert ws.ensure() is ws
    assert ws.files_dir.is_dir() and ws.db_path.is_file()
    assert orders(ws) == orders(tmp_path / "w") == orders(str(tmp_path / "w"))


def test_file_tree_reports_links_without_following_them(source: LocalToolSource, ws: Path) -> None:
    (ws / "files/alias").symlink_to("reports", target_is_directory=True)
    tree = file_tree(ws)
    assert tree["alias"] == "-> reports"
    assert "alias/q3.md" not in tree


def test_db_query_reads_rows(tmp_path: Path) -> None:
    from governance.tools._business import run_read_only_query

    ws = Workspace(tmp_path).ensure()
    result = run_read_only_query(
        ws.db_path, "SELECT order_id FROM orders ORDER BY order_id LIMIT 2"
    )
    assert result == {
        "columns": ["order_id"],
        "rows": [["ORD-0001"], ["ORD-0002"]],
        "truncated": False,
    }


def test_db_query_connection_physically_cannot_write(tmp_path: Path) -> None:
    from governance.tools._business import run_read_only_query
    from governance.tools._local import ToolExecutionError

    ws = Workspace(tmp_path).ensure()
    for sql in ("DELETE FROM orders", "UPDATE orders SET status = 'x'", "DROP TABLE orders"):
        with pytest.raises(ToolExecutionError) as err:
            run_read_only_query(ws.db_path, sql)
        assert err.value.reason == "query_not_allowed"
    assert len(orders(ws)) == 8
