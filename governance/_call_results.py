"""The results the firewall makes itself: refusals, rejections and failures, and the record of
a decision. Shared by the live call path (governance._firewall) and the approval flow
(governance._approval_flow), so a refusal reads the same whichever path made it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from governance.core._contracts import Decision, Outcome, ToolCall, ToolResult
from governance.core._errors import AuditWriteError


@dataclass(slots=True)
class Attempt:
    """Per-call state: whether the tool may have run (so a late failure is not a refusal)."""

    started: bool = False


class AuditFailed(Exception):
    """Internal: an audit append failed; the call must end without executing (further)."""


def result(call: ToolCall, outcome: Outcome, reason: str, error: str) -> ToolResult:
    """A result with no output and no decision: the firewall's own failure or refusal."""
    return ToolResult(
        call_id=call.call_id, tool=call.tool, outcome=outcome, error=error, reason=reason
    )


def rejected(call: ToolCall, reason: str, message: str) -> ToolResult:
    """Refused before any decision (arguments or schema unusable): failed, nothing executed."""
    return result(call, "failed", reason, message)


def refusal(
    call: ToolCall,
    decision: Decision,
    outcome: Outcome,
    reason: str,
    message: str,
    *,
    approval_id: str | None = None,
) -> ToolResult:
    """Not executed, with the decision that stopped it."""
    return ToolResult(
        call_id=call.call_id,
        tool=call.tool,
        outcome=outcome,
        error=message,
        reason=reason,
        decision=decision,
        approval_id=approval_id,
    )


def failure(call: ToolCall, exc: Exception, attempt: Attempt) -> ToolResult:
    """What an exception inside the firewall becomes: once the tool may have run, never "not
    executed"; before, an audit failure is `audit_unavailable` and anything else a fail-closed
    refusal (`firewall_error`)."""
    if attempt.started:
        error = f"the tool may have run, but its outcome could not be recorded ({exc})"
        return result(call, "failed", "outcome_unknown", error)
    if isinstance(exc, AuditFailed | AuditWriteError):  # the write-ahead record failed
        error = f"not executed: the audit log could not record the call ({exc})"
        return result(call, "failed", "audit_unavailable", error)
    error = f"not executed: the firewall could not decide this call ({type(exc).__name__})"
    return result(call, "blocked", "firewall_error", error)


def decision_record(decision: Decision) -> dict[str, Any]:
    """A decision as it goes on the audit chain."""
    return {
        "effect": decision.effect,
        "rule_ids": list(decision.rule_ids),
        "reason": decision.reason,
        "policy_digest": decision.policy_digest,
        "registry_digest": decision.registry_digest,
    }
