"""Start-up reconciliation: approval rows and the audit chain must tell the same story.

A state change and its audit event live in two files, so a crash (kill -9) between them leaves
a request the chain does not explain: held with no `approval.required`, decided with no
`approval.approved`/`approval.rejected`, consumed with no execution outcome. The store marks a
row `in_flight` until its event is written; at start-up every in-flight row whose writer is dead
is checked against the chain here. Nothing is ever re-executed: a consumed approval stays used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from governance.core._errors import GovernanceError
from governance.stores._approvals import ApprovalRequest
from governance.stores._backends import ApprovalBackend

_OUTCOMES = frozenset({"execution.completed", "execution.failed"})


class _Chain(Protocol):
    def events(self, run_id: str) -> Any: ...

    def append(self, run_id: str, kind: str, data: Any) -> Any: ...


@dataclass(frozen=True, slots=True)
class InDoubt:
    """One request whose row and audit chain disagreed after a crash, and what was done."""

    approval_id: str
    run_id: str
    call_id: str
    tool: str
    finding: str
    resolution: str

    def describe(self) -> str:
        return (
            f"{self.approval_id} ({self.tool}, run {self.run_id}, call {self.call_id}): "
            f"{self.finding}; {self.resolution}"
        )


def reconcile_with_audit(store: ApprovalBackend, audit: _Chain) -> list[InDoubt]:
    """Settle every in-flight request left by a dead process; report the ones in doubt.

    A row whose awaited event is on the chain is simply marked agreed. Otherwise:
    held without `approval.required` -> cancelled (nobody was asked through the audited path);
    decided without its event -> the decision is recorded now, flagged `reconciled`;
    consumed without an outcome -> never executed again (unknown effect if it had started).
    Each finding is written to the run's chain as `approval.in_doubt` and kept on the row.
    """
    found: list[InDoubt] = []
    for request in store.in_flight():
        try:
            events = [
                e for e in audit.events(request.run_id) if e.data.get("call_id") == request.call_id
            ]
        except GovernanceError:
            continue  # the chain cannot be read: leave the row in flight, fail closed
        verdict = _judge(request, events)
        if verdict is None:
            store.recorded(request.id, str(request.in_flight))
            continue
        finding, resolution, late_event = verdict
        base = {"call_id": request.call_id, "tool": request.tool, "approval_id": request.id}
        try:
            if late_event is not None:
                audit.append(request.run_id, late_event, {**base, **_decision(request)})
            audit.append(
                request.run_id,
                "approval.in_doubt",
                {
                    **base,
                    "awaited": request.in_flight,
                    "finding": finding,
                    "resolution": resolution,
                },
            )
        except GovernanceError:
            continue  # not recorded: stays in flight and is reported again next start-up
        store.mark_in_doubt(request.id, f"{finding}; {resolution}")
        found.append(
            InDoubt(
                request.id, request.run_id, request.call_id, request.tool, finding, resolution
            )
        )
    return found


def _judge(request: ApprovalRequest, events: list[Any]) -> tuple[str, str, str | None] | None:
    """None when the chain has the awaited event; else (finding, resolution, event to add)."""
    awaited = request.in_flight
    mine = [e for e in events if e.data.get("approval_id") == request.id]
    if awaited in ("approval.required", "approval.approved", "approval.rejected"):
        if any(e.kind == awaited for e in mine):
            return None
        if awaited == "approval.required":
            return (
                "held, but approval.required never reached the audit chain",
                "cancelled: it cannot be approved; propose the call again",
                None,
            )
        return (
            f"{request.status} by {request.decided_by}, but {awaited} never reached the audit "
            "chain",
            f"{awaited} recorded at restart; the approval cannot be used: propose the call again",
            awaited,
        )
    # awaited == "execution": the approval was consumed; what does the chain say happened?
    after = events
    consumed = [i for i, e in enumerate(events) if e.kind == "approval.consumed"]
    if consumed:
        after = events[consumed[-1] :]
    kinds = {e.kind for e in after}
    if kinds & _OUTCOMES:
        return None
    if "execution.started" in kinds:
        return (
            "consumed and started, but no outcome was recorded: the effect is unknown",
            "not executed again (an approval is used once); check the tool's target",
            None,
        )
    return (
        "approval consumed, but the call never executed",
        "not executed (an approval is used once); propose the call again",
        None,
    )


def _decision(request: ApprovalRequest) -> dict[str, Any]:
    return {
        "reviewer": request.decided_by,
        "comment": request.comment,
        "edited": request.approved_arguments is not None,
        "reconciled": True,
    }
