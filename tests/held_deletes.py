"""One held `fs.delete` request, as the approval-store tests create it on any backend."""

from __future__ import annotations

from governance.core._contracts import Principal
from governance.stores._backends import ApprovalBackend

ALICE = Principal(actor="alice", agent="ops-agent", team="platform")


def hold_delete(
    store: ApprovalBackend,
    call_id: str,
    waiter: str | None = None,
    awaiting: str | None = None,
) -> str:
    """A pending request to delete notes/a.txt for alice's run-1; its id."""
    return store.create(
        run_id="run-1",
        call_id=call_id,
        tool="fs.delete",
        arguments={"path": "notes/a.txt"},
        arguments_digest="sha256:" + "a" * 64,
        principal=ALICE,
        policy_digest="sha256:" + "p" * 64,
        rule_ids=("approve-deletes",),
        reason="rule:approve-deletes",
        risk="high",
        waiter=waiter,
        awaiting=awaiting,
    ).id
