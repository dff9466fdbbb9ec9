"""Waiting in-process for a reviewer: `proctor ask --wait SECONDS`.

The gateway holds the run's calls as *awaited* by this process (governance.Gateway
`held_calls="awaited"`): this caller alone resumes them, so if the process dies while it waits,
the next gateway's start-up reconciliation expires the request (`approval.expired`) and nothing
of it can run. A decision within the time resumes the run here, once; no decision in time
withdraws the request (`approval.cancelled`) and the run goes on with the call refused.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # `proctor --help` loads this module: the stores load with a waiting run
    from governance import ApprovalRequest
    from harness._loop import AgentLoop, RunState

WITHDRAWN_BY = "proctor"


class Waits(Protocol):
    """The approval store's blocking read (governance.stores.ApprovalBackend.wait)."""

    def wait(self, approval_id: str, *, timeout: float) -> ApprovalRequest: ...


class Withdraws(Protocol):
    """The firewall's audited withdrawal of a pending request (governance.Firewall.withdraw)."""

    def withdraw(self, approval_id: str, *, by: str, reason: str) -> ApprovalRequest: ...


def wait_for_reviews(
    loop: AgentLoop, state: RunState, approvals: Waits, firewall: Withdraws, seconds: float
) -> RunState:
    """Resume `state` as each held call is decided, within `seconds` in all; a request still
    pending then is withdrawn and the run resumed with that call refused."""
    from governance.stores import ApprovalConflict

    deadline = time.monotonic() + seconds
    while state.status == "waiting_approval" and state.held is not None:
        approval_id = state.held.approval_id
        request = approvals.wait(approval_id, timeout=max(deadline - time.monotonic(), 0.0))
        if request.status == "pending":
            try:
                firewall.withdraw(
                    approval_id,
                    by=WITHDRAWN_BY,
                    reason=f"nobody decided within --wait {seconds:g}s",
                )
            except ApprovalConflict:
                pass  # decided at the last moment: resume with that decision
        state = loop.resume(state)
        if state.held is not None and state.held.approval_id == approval_id:
            break  # the firewall still reports it pending: never spin on it
    return state
