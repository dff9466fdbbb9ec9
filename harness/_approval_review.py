"""Reviewing held calls, shared by `proctor approvals` and the console's Approvals page so both
show the same thing and decide the same way.

A reviewer sees only redacted arguments; an edit names the keys it changes and is merged over
the raw arguments sealed in the store (a secret the reviewer never saw stays as proposed), then
re-evaluated by the firewall exactly as a live call would be.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the gateway and stores load only when a command opens them
    from governance import Gateway
    from governance.stores import ApprovalBackend, ApprovalRequest, ApprovalStatus


def request_json(request: ApprovalRequest) -> dict[str, Any]:
    """What a reviewer may see of a request: never the raw arguments."""
    return {
        "id": request.id,
        "status": request.status,
        "state": request.state,  # the status, or what became of an approved call once used
        "tool": request.tool,
        # Redacted: raw arguments stay sealed in the store, for the one approved execution.
        "arguments": request.shown_arguments,
        "approved_arguments": request.shown_approved_arguments,
        "run_id": request.run_id,
        "call_id": request.call_id,
        "actor": request.actor,
        "agent": request.agent,
        "team": request.team,
        "risk": request.risk,
        "rule_ids": list(request.rule_ids),
        "reason": request.reason,
        "policy_digest": request.policy_digest,
        "created_at": request.created_at.isoformat(),
        "expires_at": request.expires_at.isoformat(),
        "decided_by": request.decided_by,
        "comment": request.comment,
        "status_reason": request.status_reason,
        "consumed": request.consumed,
        "in_doubt": request.in_doubt,
    }


def edit_value(raw: str) -> Any:
    """One edited argument as typed: a JSON value, else the text itself (a bare word)."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def current_requests(
    approvals: ApprovalBackend, *, status: ApprovalStatus | None = None, run_id: str | None = None
) -> list[ApprovalRequest]:
    """The requests as they stand now: the ones past their deadline are expired first, so a
    listing never offers a decision the store would refuse."""
    approvals.expire_due()
    return approvals.list(status=status, run_id=run_id)


def approve(
    gateway: Gateway,
    approval_id: str,
    reviewer: str,
    *,
    edits: Mapping[str, Any],
    comment: str | None,
) -> ApprovalRequest:
    """Approve as `reviewer`; `edits` (only the changed keys) are merged over the raw arguments
    and re-evaluated. Raises EditRefused (still pending), ApprovalNotFound, ApprovalConflict,
    SelfApprovalError, IdentityRefused or ApprovalStoreError."""
    request = gateway.approvals.get(approval_id)
    arguments = {**request.arguments, **edits} if edits else None
    return gateway.firewall.approve(approval_id, reviewer, arguments=arguments, comment=comment)


def resume_hint(state_dir: Path, approved: ApprovalRequest) -> str:
    """How a detached approved call gets run: it depends on where the call came from."""
    from harness._run_store import RunNotFound, RunStore

    try:
        stored = RunStore(state_dir).load(approved.run_id)
    except RunNotFound:
        stored = None
    if stored is not None and stored.state.status == "waiting_approval":
        return f"resume the run with: proctor approvals resume {approved.run_id}"
    from governance import RESUME_TOOL  # the MCP server stack: only on this path

    # No stored run: the call came through `proctor serve`, the LiteLLM guardrail or the
    # library, whose client holds the conversation; it runs the approved call itself.
    arguments = json.dumps({"approval_id": approved.id})
    return (
        f"run {approved.run_id} is not a stored run: the client that made the call runs it, "
        f"once - through `proctor serve`, by calling the tool {RESUME_TOOL} with {arguments}; "
        "through the LiteLLM guardrail, by sending the same call again (same tool, arguments "
        "and key)"
    )
