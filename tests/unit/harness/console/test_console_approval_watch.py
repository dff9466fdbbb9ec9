"""Decisions made outside the console (the CLI, another console) reach its pages."""

from __future__ import annotations

from pathlib import Path

from governance.stores._approvals import ApprovalStore
from harness.console._approval_watch import ApprovalWatch
from harness.console._live import EventHub
from tests.held_deletes import hold_delete


def test_a_request_created_then_decided_by_another_connection_is_published_each_time(
    tmp_path: Path,
) -> None:
    db = tmp_path / "approvals.sqlite"
    hub = EventHub()
    with ApprovalStore(db) as console_store, ApprovalStore(db) as other:
        watch = ApprovalWatch(console_store, hub, interval=0.05)
        try:
            approval_id = hold_delete(other, "c1")
            created = hub.wait_after(0, timeout=30)
            assert [(e.topic, e.data) for e in created.events] == [
                ("approvals", {"pending": [approval_id]})
            ]
            other.reject(approval_id, "bob", comment="no")
            decided = hub.wait_after(created.events[-1].id, timeout=30)
            assert [(e.topic, e.data) for e in decided.events] == [("approvals", {"pending": []})]
        finally:
            watch.stop()


def test_nothing_is_published_while_nothing_changes_and_stop_ends_the_thread(
    tmp_path: Path,
) -> None:
    hub = EventHub()
    with ApprovalStore(tmp_path / "approvals.sqlite") as store:
        hold_delete(store, "c1")
        watch = ApprovalWatch(store, hub, interval=0.01)
        assert hub.wait_after(0, timeout=0.3).events == ()  # already pending at start: no news
        watch.stop()
        assert not watch._thread.is_alive()
