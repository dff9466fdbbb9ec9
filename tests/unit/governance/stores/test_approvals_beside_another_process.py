"""A long-lived process (a gateway, the LiteLLM proxy) keeps its approval store open while a
reviewer's short-lived process (`proctor approvals approve`) opens and closes the same file.

What was found: opening the store chmod-ed its file through a new descriptor and closed it,
which dropped the SQLite lock the open connection held; the reviewer's process, closing last
as it believed, deleted the WAL the long-lived connection still wrote to, and every request
that connection created afterwards was lost."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from governance.core._contracts import Principal
from governance.stores._approvals import ApprovalStore

ALICE = Principal(actor="alice", agent="ops-agent", team="platform")


def _hold(store: ApprovalStore, call_id: str) -> str:
    return store.create(
        run_id="run-1",
        call_id=call_id,
        tool="fs.delete",
        arguments={"path": f"notes/{call_id}.txt"},
        arguments_digest="sha256:" + "a" * 64,
        principal=ALICE,
        policy_digest="sha256:" + "p" * 64,
        rule_ids=("approve-deletes",),
        reason="rule:approve-deletes",
        risk="high",
    ).id


def _ids_seen_by_another_process(path: Path) -> list[str]:
    code = textwrap.dedent(
        f"""
        from governance.stores._approvals import ApprovalStore
        store = ApprovalStore({str(path)!r})
        print(" ".join(sorted(r.id for r in store.list())))
        store.close()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.split()


def test_requests_made_after_another_process_closed_the_store_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "approvals.sqlite"
    store = ApprovalStore(path)
    try:
        first = _hold(store, "c1")
        assert _ids_seen_by_another_process(path) == [first]
        second = _hold(store, "c2")  # written after the other process closed its connection
        assert _ids_seen_by_another_process(path) == sorted([first, second])
    finally:
        store.close()
    assert sorted(r.id for r in ApprovalStore(path).list()) == sorted([first, second])

