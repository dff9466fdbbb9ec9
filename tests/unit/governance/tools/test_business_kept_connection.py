"""The business tools keep one connection between calls, and never read through it a file the
path no longer names: a replaced, rewritten, restored or deleted database is seen at once."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from governance.core._contracts import Principal, ToolCall, ToolResult
from governance.tools import Workspace, builtin_tools, tickets
from governance.tools._business import create_database
from governance.tools._local import LocalToolSource


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "ws").ensure()


@pytest.fixture
def source(ws: Workspace) -> LocalToolSource:
    return builtin_tools(ws.root)


def run(source: LocalToolSource, tool: str, /, **arguments: Any) -> ToolResult:
    principal = Principal(actor="alice", agent="bot", team="support")
    return source.call(ToolCall("c1", tool, arguments, "run-1", principal))


def status_of(source: LocalToolSource, order_id: str) -> str:
    result = run(source, "orders.lookup", order_id=order_id)
    assert result.ok, result.error
    return str(json.loads(result.output)["status"])


def other_database(tmp_path: Path, status: str) -> Path:
    """A complete database whose ORD-0001 has `status`, its WAL folded into the file."""
    path = tmp_path / f"other-{status}.sqlite"
    create_database(path)
    conn = sqlite3.connect(path)
    try:
        with conn:
            conn.execute("UPDATE orders SET status = ? WHERE order_id = 'ORD-0001'", (status,))
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return path


def test_a_database_replaced_by_rename_is_read_from_the_new_file(
    source: LocalToolSource, ws: Workspace, tmp_path: Path
) -> None:
    assert status_of(source, "ORD-0001") == "shipped"  # the connection is now kept
    os.replace(other_database(tmp_path, "lost"), ws.db_path)
    assert status_of(source, "ORD-0001") == "lost"


def test_a_database_deleted_and_recreated_is_read_from_the_new_file(
    source: LocalToolSource, ws: Workspace, tmp_path: Path
) -> None:
    assert status_of(source, "ORD-0001") == "shipped"
    ws.db_path.unlink()
    shutil.copyfile(other_database(tmp_path, "returned"), ws.db_path)
    assert status_of(source, "ORD-0001") == "returned"


def test_a_database_rewritten_in_place_outside_sqlite_is_read_afresh(
    source: LocalToolSource, ws: Workspace, tmp_path: Path
) -> None:
    assert status_of(source, "ORD-0001") == "shipped"
    inode = ws.db_path.stat().st_ino
    ws.db_path.write_bytes(other_database(tmp_path, "held").read_bytes())
    assert ws.db_path.stat().st_ino == inode  # the same file, other bytes
    assert status_of(source, "ORD-0001") == "held"


def test_a_database_restored_with_the_backup_api_drops_the_rows_written_before(
    source: LocalToolSource, ws: Workspace, tmp_path: Path
) -> None:
    template = other_database(tmp_path, "shipped")  # as harness._suite_cache restores it
    assert run(source, "tickets.create", title="one", body="b").ok
    assert run(source, "tickets.create", title="two", body="b").ok
    src, dst = sqlite3.connect(template), sqlite3.connect(ws.db_path)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
    assert tickets(ws.root) == []
    again = run(source, "tickets.create", title="three", body="b")
    assert again.ok and json.loads(again.output)["ticket_id"] == 1
    assert [row["title"] for row in tickets(ws.root)] == ["three"]


def test_a_deleted_database_is_an_error_and_is_not_recreated(
    source: LocalToolSource, ws: Workspace
) -> None:
    assert status_of(source, "ORD-0001") == "shipped"
    ws.db_path.unlink()
    result = run(source, "orders.lookup", order_id="ORD-0001")
    assert not result.ok
    assert result.outcome == "failed"
    assert not ws.db_path.exists()


def test_a_write_through_the_kept_connection_is_committed_for_other_readers(
    source: LocalToolSource, ws: Workspace
) -> None:
    assert run(source, "tickets.create", title="seen", body="b").ok
    conn = sqlite3.connect(ws.db_path)
    try:
        assert conn.execute("SELECT title FROM tickets").fetchall() == [("seen",)]
    finally:
        conn.close()


def test_a_refused_write_leaves_no_row_and_the_next_call_works(
    source: LocalToolSource, ws: Workspace
) -> None:
    refused = run(source, "refunds.create_draft", order_id="ORD-0002", amount=999.0, reason="r")
    assert not refused.ok and refused.reason == "amount_exceeds_total"
    assert run(source, "refunds.create_draft", order_id="ORD-0002", amount=1.0, reason="r").ok
    conn = sqlite3.connect(ws.db_path)
    try:
        assert conn.execute("SELECT amount FROM refund_drafts").fetchall() == [(1.0,)]
    finally:
        conn.close()
