"""The suite cache resets a scenario's workspace and state directory before each scenario,
doing only the work a change calls for."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness._suite_cache import SuiteCache


class _CountingTemplate:
    """Stands in for the cache's template database and counts the copies made from it."""

    def __init__(self, real: sqlite3.Connection) -> None:
        self.real = real
        self.copies = 0

    def backup(self, target: sqlite3.Connection, **kwargs: Any) -> None:
        self.copies += 1
        self.real.backup(target, **kwargs)

    def close(self) -> None:
        self.real.close()


@pytest.fixture
def cache() -> Iterator[SuiteCache]:
    made = SuiteCache()
    try:
        yield made
    finally:
        made.close()


def _drafts(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM refund_drafts").fetchone()[0])
    finally:
        conn.close()


def _insert_draft(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        with conn:
            conn.execute(
                "INSERT INTO refund_drafts (order_id, amount, reason) VALUES ('ORD-0001', 1, 'r')"
            )
    finally:
        conn.close()


def test_rows_a_scenario_committed_are_gone_after_the_reset(cache: SuiteCache) -> None:
    workspace = cache.fresh_workspace()
    _insert_draft(workspace.db_path)
    assert _drafts(workspace.db_path) == 1
    assert _drafts(cache.fresh_workspace().db_path) == 0


def test_an_untouched_database_is_not_copied_again(cache: SuiteCache) -> None:
    counting = _CountingTemplate(cache._template_db)
    cache._template_db = counting  # type: ignore[assignment]
    cache.fresh_workspace()
    first = counting.copies
    cache.fresh_workspace()
    cache.fresh_workspace()
    assert counting.copies == first, "nothing committed: nothing to restore"
    _insert_draft(cache.workspace.db_path)
    cache.fresh_workspace()
    assert counting.copies == first + 1


def test_files_a_scenario_changed_are_restored(cache: SuiteCache) -> None:
    files = cache.fresh_workspace().files_dir
    originals = {p.relative_to(files): p.read_bytes() for p in files.rglob("*") if p.is_file()}
    assert originals, "the template seeds files"
    for path in originals:
        (files / path).write_bytes(b"changed")
    (files / "planted.txt").write_text("planted", encoding="utf-8")
    files = cache.fresh_workspace().files_dir
    now = {p.relative_to(files): p.read_bytes() for p in files.rglob("*") if p.is_file()}
    assert now == originals


def test_the_state_directory_is_empty_for_every_scenario(cache: SuiteCache) -> None:
    first = cache.new_state_dir()
    (first / "left-behind").mkdir()
    (first / "left-behind" / "audit.sqlite").write_bytes(b"x")
    second = cache.new_state_dir()
    assert second.is_dir() and not any(second.iterdir())
    second.rmdir()
    second.symlink_to(Path("/"))
    third = cache.new_state_dir()
    assert third.is_dir() and not third.is_symlink() and not any(third.iterdir())
