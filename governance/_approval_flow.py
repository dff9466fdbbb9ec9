"""Held calls: parking a call for a human, the review, and resuming it - re-verified, never trusted.

The firewall stays the one door: a held call is parked here only after its proposal and
decision are on the audit chain, and a resumed call runs through the firewall's own steps
(decision, budgets, write-ahead record, execution) in the same order as a live call. What this
module adds is the approval bookkeeping around them: the request in the approval store, the
reviewer's decision and edit checks, and the checks before an approved call may run (it is
the same call, approved, unexpired, unused, untampered, and policy still does not block it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol

from governance._call_results import Attempt, decision_record, failure, refusal
from governance.arguments._schemas import SchemaRefused
from governance.arguments._snapshot import ArgumentRefused, PreparedArguments, prepare_arguments
from governance.core._contracts import (
    Decision,
    Principal,
    RunUsage,
    ToolCall,
    ToolDescriptor,
    ToolResult,
)
from governance.core._errors import GovernanceError
from governance.policy._compile import Policy
from governance.stores._approvals import ApprovalError, ApprovalRequest, ApprovalStoreError
from governance.stores._backends import ApprovalBackend
from governance.stores._budgets import BudgetReservation
from governance.tools._registry import ToolRegistry

HELD_MESSAGE = "held for human approval; nothing was executed"


class EditRefused(GovernanceError):
    """A reviewer's edited arguments were refused; the request stays pending, nothing ran."""

    def __init__(self, approval_id: str, reason: str, message: str) -> None:
        self.approval_id = approval_id
        self.reason = reason
        super().__init__(message)


class CallSteps(Protocol):
    """The firewall's own steps, reused so a resumed call runs the sequence a live call runs."""

    @property
    def registry(self) -> ToolRegistry: ...

    def decide_under_policy(
        self, call: ToolCall, usage: RunUsage | None
    ) -> tuple[Decision, Policy | None]: ...

    def prepare(self, call: ToolCall) -> PreparedArguments: ...

    def schema_problem(
        self, descriptor: ToolDescriptor, arguments: Mapping[str, Any]
    ) -> str | None: ...

    def budget_gate(
        self,
        call: ToolCall,
        descriptor: ToolDescriptor,
        decision: Decision,
        policy: Policy | None,
        *,
        reserve: bool,
    ) -> BudgetReservation | ToolResult | None: ...

    def settle(self, reservation: BudgetReservation | None, outcome: str) -> None: ...

    def execute(
        self,
        call: ToolCall,
        decision: Decision,
        reservation: BudgetReservation | None,
        policy: Policy | None,
        attempt: Attempt | None,
    ) -> ToolResult: ...

    def record(self, call: ToolCall, kind: str, data: Mapping[str, Any]) -> None: ...

    def record_now(self, call: ToolCall, kind: str, data: Mapping[str, Any]) -> None: ...

    def flush(self) -> None: ...

    def digest_arguments(self, arguments: Mapping[str, Any]) -> str: ...


class ApprovalFlow:
    """The approval side of the firewall: hold, approve, reject, resume.

    Held calls are detached by default: the request outlives the process that held it, and
    whoever has the run (`proctor approvals resume`, an MCP client) resumes it once decided. A
    `waiter` (a process token) marks them as awaited by a caller blocking in that process for
    the decision (`proctor ask --wait`): that caller alone can resume them, so when its process
    dies, the next gateway's start-up reconciliation expires them (`approval.expired`).
    """

    def __init__(
        self, steps: CallSteps, approvals: ApprovalBackend | None, *, waiter: str | None = None
    ) -> None:
        self._steps = steps
        self._approvals = approvals
        self._waiter = waiter

    def hold(
        self, call: ToolCall, descriptor: ToolDescriptor | None, decision: Decision
    ) -> ToolResult:
        """Park a call the policy sent to a human: a request in the approval store, bound to the
        call's arguments digest and the rules that held it. Nothing executes here."""
        if self._approvals is None:
            self._steps.record(call, "approval.required", {"rule_ids": list(decision.rule_ids)})
            return refusal(call, decision, "held", decision.reason, HELD_MESSAGE)
        # No request is parked for a call whose proposal and decision are not on the chain.
        self._steps.flush()
        try:
            request = self._approvals.create(
                run_id=call.run_id,
                call_id=call.call_id,
                tool=call.tool,
                arguments=dict(call.arguments),
                arguments_digest=self._steps.digest_arguments(call.arguments),
                principal=call.principal,
                policy_digest=decision.policy_digest,
                rule_ids=decision.rule_ids,
                reason=decision.reason,
                risk=descriptor.risk if descriptor else "critical",
                awaiting="approval.required",
                waiter=self._waiter,
            )
        except Exception as exc:  # ApprovalStoreError, or a store failing in any other way
            # Nowhere to park the call, so nobody can approve it: fail closed.
            self._steps.record(call, "approval.unavailable", {"error": str(exc)})
            return refusal(
                call,
                decision,
                "blocked",
                "approval_store_unavailable",
                "needs approval, but the approval store is unavailable; nothing was executed",
            )
        self._steps.record(
            call,
            "approval.required",
            {
                "approval_id": request.id,
                "rule_ids": list(decision.rule_ids),
                "expires_at": request.expires_at.isoformat(),
            },
        )
        self._agreed(request.id, "approval.required")
        return ToolResult(
            call_id=call.call_id,
            tool=call.tool,
            outcome="held",
            error=f"held for human approval ({request.id}); nothing was executed",
            reason=decision.reason,
            decision=decision,
            approval_id=request.id,
        )

    def approve(
        self,
        approval_id: str,
        reviewer: str,
        *,
        arguments: Mapping[str, Any] | None = None,
        comment: str | None = None,
    ) -> ApprovalRequest:
        """Approve a held call, optionally with edited arguments, which are re-evaluated first.

        An edit is refused (EditRefused, request left pending, refusal on the chain) when it
        fails the tool's schema, when policy now blocks it, or when it raises the risk above
        what the reviewer was shown (a stricter rule now applies).
        """
        store = self._require_approvals()
        request = store.get(approval_id)
        if arguments is not None:
            arguments = self._check_edit(request, arguments)
        approved = store.approve(
            approval_id,
            reviewer,
            arguments=arguments,
            comment=comment,
            awaiting="approval.approved",
        )
        edited = arguments is not None
        self._record_for(
            approved,
            "approval.approved",
            {
                "approval_id": approval_id,
                "reviewer": reviewer,
                "edited": edited,
                "arguments": dict(approved.effective_arguments),
                "arguments_digest": self._steps.digest_arguments(approved.effective_arguments),
                "comment": comment,
            },
        )
        self._agreed(approval_id, "approval.approved")
        return approved

    def reject(self, approval_id: str, reviewer: str, *, comment: str) -> ApprovalRequest:
        store = self._require_approvals()
        rejected = store.reject(
            approval_id, reviewer, comment=comment, awaiting="approval.rejected"
        )
        self._record_for(
            rejected,
            "approval.rejected",
            {"approval_id": approval_id, "reviewer": reviewer, "comment": comment},
        )
        self._agreed(approval_id, "approval.rejected")
        return rejected

    def withdraw(self, approval_id: str, *, by: str, reason: str) -> ApprovalRequest:
        """Cancel a pending request (the conditional update; ApprovalConflict when a reviewer or
        the expiry got there first), then put `approval.cancelled` on its run's chain."""
        cancelled = self._require_approvals().cancel(approval_id, by=by, reason=reason)
        self._record_for(
            cancelled,
            "approval.cancelled",
            {"approval_id": approval_id, "by": by, "reason": reason},
        )
        return cancelled

    def _check_edit(self, request: ApprovalRequest, arguments: object) -> dict[str, Any]:
        """The edited arguments in the form that will execute, or EditRefused."""
        descriptor = self._steps.registry.get(request.tool)
        principal = Principal(request.actor, request.agent, request.team)
        call = ToolCall(request.call_id, request.tool, {}, request.run_id, principal)
        problem: tuple[str, str] | None = None
        recorded: dict[str, Any] | None = None
        if descriptor is None:
            problem = ("unknown_tool", f"{request.tool} is no longer registered")
        else:
            try:
                prepared = prepare_arguments(descriptor.input_schema, arguments)
                call = replace(call, arguments=prepared.arguments)
                recorded = prepared.arguments
                invalid = self._steps.schema_problem(descriptor, call.arguments)
            except (ArgumentRefused, SchemaRefused) as exc:
                problem = (exc.reason, f"the edited arguments are refused: {exc}")
            else:
                if invalid is not None:
                    problem = ("invalid_arguments", f"the edited arguments are invalid: {invalid}")
        if problem is None:
            decision = self._steps.decide_under_policy(call, None)[0]
            new_rules = set(decision.rule_ids) - set(request.rule_ids)
            if decision.effect == "block":
                problem = ("edit_blocked_by_policy", f"policy blocks the edit: {decision.message}")
            elif decision.effect == "require_approval" and new_rules:
                problem = (
                    "edit_raises_risk",
                    "the edit brings in rules the reviewer was not shown: "
                    + ", ".join(sorted(new_rules)),
                )
        if problem is not None:
            self._record_for(
                request,
                "approval.edit_refused",
                {"approval_id": request.id, "reason": problem[0], "arguments": recorded},
            )
            raise EditRefused(request.id, problem[0], f"{request.id}: {problem[1]}")
        return dict(call.arguments)

    def resume(
        self, approval_id: str, call: ToolCall, *, usage: RunUsage | None = None
    ) -> ToolResult:
        """Execute a held call once its request is approved - re-verified, never trusted.

        Checks the request still matches this call (tool, run, arguments digest), is approved,
        unexpired and unused, and re-evaluates policy: if policy changed while the request was
        pending and now blocks, nothing executes. Rejected or expired: a refused result.
        """
        attempt = Attempt()
        try:
            return self._resume(approval_id, call, usage, attempt)
        except Exception as exc:  # never a traceback: refused, or "may have run" once started
            return replace(failure(call, exc, attempt), approval_id=approval_id)

    def _resume(
        self, approval_id: str, call: ToolCall, usage: RunUsage | None, attempt: Attempt
    ) -> ToolResult:
        store = self._require_approvals()
        try:
            store.expire_due()
            request = store.get(approval_id)
        except ApprovalError as exc:
            return self._approval_refusal(call, approval_id, "approval_store_unavailable", exc)
        if request.status == "pending":
            return ToolResult(
                call_id=call.call_id,
                tool=call.tool,
                outcome="held",
                error=f"still waiting for human approval ({approval_id}); nothing was executed",
                reason="approval_pending",
                approval_id=approval_id,
            )
        if request.status != "approved":
            reason = f"approval_{request.status}"
            why = request.comment or request.status_reason or request.status
            self._refused(call, approval_id, reason)
            return ToolResult(
                call_id=call.call_id,
                tool=call.tool,
                outcome="blocked",
                error=f"the request was {request.status} ({why}); nothing was executed",
                reason=reason,
                approval_id=approval_id,
            )
        doubt = _approval_doubt(request)
        if doubt is not None:
            self._refused(call, approval_id, doubt)
            return self._approval_refusal(call, approval_id, doubt, None)
        # The held call was judged in its prepared form; compare like with like. What executes
        # is bound to the request: its arguments (prepared again, by the same function) and
        # its proposing principal.
        try:
            call = call.with_arguments(self._steps.prepare(call).arguments)
            execute = ToolCall(
                call.call_id,
                call.tool,
                self._steps.prepare(call.with_arguments(request.effective_arguments)).arguments,
                call.run_id,
                Principal(request.actor, request.agent, request.team),
            )
        except ArgumentRefused as exc:
            self._refused(call, approval_id, exc.reason)
            return self._approval_refusal(call, approval_id, exc.reason, exc)
        mismatch = self._approval_mismatch(request, call)
        if mismatch is not None:
            self._refused(call, approval_id, mismatch)
            return self._approval_refusal(call, approval_id, mismatch, None)
        decision, policy = self._steps.decide_under_policy(execute, usage)
        self._steps.record(call, "policy.rechecked", decision_record(decision))
        if decision.effect == "block":
            self._steps.record(call, "approval.revoked", decision_record(decision))
            return refusal(
                execute,
                decision,
                "blocked",
                decision.reason,
                f"approved, but policy now blocks it: {decision.message}; nothing was executed",
                approval_id=approval_id,
            )
        descriptor = self._steps.registry.get(call.tool)
        if descriptor is None:  # approved or not, an unregistered name has nothing to execute
            self._refused(call, approval_id, "unknown_tool")
            return self._approval_refusal(call, approval_id, "unknown_tool", None)
        reservation = self._steps.budget_gate(execute, descriptor, decision, policy, reserve=True)
        if isinstance(reservation, ToolResult):
            return replace(reservation, approval_id=approval_id)
        try:
            won = store.consume(approval_id, awaiting="execution")
        except ApprovalError as exc:
            self._steps.settle(reservation, "released")
            return self._approval_refusal(call, approval_id, "approval_store_unavailable", exc)
        if not won:
            self._steps.settle(reservation, "released")
            self._refused(call, approval_id, "used")
            return self._approval_refusal(call, approval_id, "approval_already_used", None)
        try:
            self._steps.record(call, "approval.consumed", {"approval_id": approval_id})
        except BaseException:
            self._steps.settle(reservation, "released")  # nothing was dispatched
            raise
        result = self._steps.execute(execute, decision, reservation, policy, attempt)
        if result.reason != "audit_incomplete":  # else the outcome is missing: stays in doubt
            self._agreed(approval_id, "execution")
        edited = dict(execute.arguments) != dict(call.arguments)
        return replace(
            result, approval_id=approval_id, arguments=execute.arguments if edited else None
        )

    def _approval_mismatch(self, request: ApprovalRequest, call: ToolCall) -> str | None:
        if (request.tool, request.run_id, request.call_id) != (
            call.tool,
            call.run_id,
            call.call_id,
        ):
            return "approval_mismatch"
        if request.consumed:
            return "approval_already_used"
        if self._steps.digest_arguments(request.arguments) != request.arguments_digest:
            return "approval_arguments_tampered"
        if self._steps.digest_arguments(call.arguments) != request.arguments_digest:
            return "approval_mismatch"
        if request.expires_at <= self._approvals_now():
            return "approval_expired"
        return None

    def _refused(self, call: ToolCall, approval_id: str, reason: str) -> None:
        self._steps.record(call, "approval.refused", {"approval_id": approval_id, "reason": reason})

    def _agreed(self, approval_id: str, event: str) -> None:
        """The awaited event is on the chain; if the store cannot note it, restart will."""
        try:
            self._require_approvals().recorded(approval_id, event)
        except ApprovalStoreError:
            pass  # the row stays in flight: reconciled against the chain at the next start-up

    def _approvals_now(self) -> Any:
        return self._require_approvals().now()

    def _approval_refusal(
        self, call: ToolCall, approval_id: str, reason: str, exc: Exception | None
    ) -> ToolResult:
        detail = f": {exc}" if exc else ""
        return ToolResult(
            call_id=call.call_id,
            tool=call.tool,
            outcome="blocked",
            error=f"not executed ({reason}{detail})",
            reason=reason,
            approval_id=approval_id,
        )

    def _require_approvals(self) -> ApprovalBackend:
        if self._approvals is None:
            raise ApprovalStoreError("this firewall has no approval store configured")
        return self._approvals

    def _record_for(self, request: ApprovalRequest, kind: str, data: Mapping[str, Any]) -> None:
        principal = Principal(request.actor, request.agent, request.team)
        call = ToolCall(request.call_id, request.tool, {}, request.run_id, principal)
        self._steps.record_now(call, kind, data)


def _approval_doubt(request: ApprovalRequest) -> str | None:
    """Why an approved request cannot be trusted to run, before anything else is checked."""
    if request.arguments_problem is not None:
        return request.arguments_problem  # sealed arguments tampered, missing or keyless
    if request.in_doubt is not None:
        return "approval_in_doubt"  # a crash left its row and the audit chain disagreeing
    if request.in_flight is not None and not request.consumed:
        return "approval_unrecorded"  # the decision is not yet on the audit chain
    return None
