"""The firewall: the one place a tool call is decided, recorded and - maybe - executed.

It wraps the registry's sources and keeps the `ToolSource` interface, so an agent loop is the
same code with or without governance. Nothing else in Proctor calls `ToolSource.call`.

Write-ahead, batched: the events before a tool runs (`tool.requested`, `policy.decided`, ...)
are held per call and written in ONE audit transaction together with `execution.started`, so
one commit (one fsync in the `fsync` durability mode) stands between a decision and the tool.
A call refused before that point writes its held events on its way out. If the batch cannot be
written, nothing executes (`audit_unavailable`). Observers see an event once it is written.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from jsonschema import Draft202012Validator

from governance._approvals import ApprovalError, ApprovalRequest, ApprovalStoreError
from governance._arguments import (
    ArgumentRefused,
    PreparedArguments,
    prepare_arguments,
    prepare_snapshot,
    snapshot_arguments,
)
from governance._budgets import BudgetDenial, BudgetReservation, BudgetStoreError
from governance._canonical import digest
from governance._contracts import (
    Decision,
    Outcome,
    PolicyContext,
    Principal,
    RunUsage,
    ToolCall,
    ToolDescriptor,
    ToolResult,
)
from governance._errors import AuditWriteError, GovernanceError
from governance._output_screen import OutputPolicy, screen_secrets
from governance._policy_compile import Policy
from governance._policy_eval import evaluate, explain
from governance._registry import ToolRegistry
from governance._schemas import SchemaRefused, first_problem, local_validator
from governance._stores import ApprovalBackend, BudgetBackend

DEFAULT_MAX_RESULT_CHARS = 20_000

# The lifecycle, in order. `approval.required` only for held calls; a block stops after
# `policy.decided`; `call.rejected` is for calls that never reach a decision (bad arguments).
LIFECYCLE = (
    "tool.requested",
    "call.rejected",
    "policy.decided",
    "budget.denied",
    "approval.required",
    "approval.unavailable",
    "execution.started",
    "execution.completed",
    "execution.failed",
)
# Review and resume events, on the same run's chain.
APPROVAL_EVENTS = (
    "policy.rechecked",
    "approval.approved",
    "approval.rejected",
    "approval.edit_refused",
    "approval.refused",
    "approval.revoked",
    "approval.consumed",
)

# Held back and written with the next event that is not one of them (`execution.started`, an
# approval event) or when the call returns: all of them come before any tool runs.
_BATCHED = frozenset({"tool.requested", "call.rejected", "policy.decided", "budget.denied"})

# Failures after which the side effect may have landed: the budget slot stays counted.
_UNKNOWN_EFFECT_REASONS = frozenset({"timeout", "tool_error", "connection_lost"})


class EditRefused(GovernanceError):
    """A reviewer's edited arguments were refused; the request stays pending, nothing ran."""

    def __init__(self, approval_id: str, reason: str, message: str) -> None:
        self.approval_id = approval_id
        self.reason = reason
        super().__init__(message)


class PolicySource(Protocol):
    """Hands out the policy in force right now (a file that may have been edited)."""

    def current(self) -> Policy: ...


class AuditSink(Protocol):
    """Where the write-ahead record goes. `append` raises AuditWriteError when it cannot write.

    A sink that also has `append_many(run_id, [(kind, data), ...])` (all or nothing, one
    transaction: see governance._stores.AuditBackend) gets each call's batch in one write.
    """

    def append(self, run_id: str, kind: str, data: Mapping[str, Any]) -> Any: ...

    def digest_arguments(self, arguments: Mapping[str, Any]) -> str: ...


@dataclass(frozen=True, slots=True)
class StaticPolicy:
    """A policy that never changes: for tests, benchmarks and embedded use."""

    policy: Policy

    def current(self) -> Policy:
        return self.policy


@dataclass(frozen=True, slots=True)
class LifecycleEvent:
    """One step of one call, as recorded on the audit chain and handed to observers."""

    kind: str
    run_id: str
    call_id: str
    tool: str
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _Attempt:
    """Per-call state: whether the tool may have run (so a late failure is not a refusal)."""

    started: bool = False


class _AuditFailed(Exception):
    """Internal: an audit append failed; the call must end without executing (further)."""


class Firewall:
    """Decides every call by policy, writes the audit record ahead, and only then executes."""

    name = "firewall"

    def __init__(
        self,
        registry: ToolRegistry,
        policy: PolicySource,
        audit: AuditSink,
        *,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
        observers: tuple[Callable[[LifecycleEvent], None], ...] = (),
        approvals: ApprovalBackend | None = None,
        budgets: BudgetBackend | None = None,
        evidence: bool = False,
    ) -> None:
        if max_result_chars < 1:
            raise ValueError("max_result_chars must be positive")
        self._registry = registry
        self._policy = policy
        self._audit = audit
        self._max_result_chars = max_result_chars
        self._observers = list(observers)
        self._validators: dict[str, Draft202012Validator] = {}
        self._approvals = approvals
        self._budgets = budgets
        # With evidence, every decision carries which rules matched and were decisive (what
        # policy coverage is measured from); without, the indexed fast path decides.
        self._evidence = evidence
        self._local = threading.local()  # .batch: this thread's held events, inside call()

    @property
    def registry(self) -> ToolRegistry:
        return self._registry

    def add_observer(self, observer: Callable[[LifecycleEvent], None]) -> None:
        self._observers.append(observer)

    def list_tools(self) -> list[ToolDescriptor]:
        return self._registry.descriptors()

    def decide(self, call: ToolCall, usage: RunUsage | None = None) -> Decision:
        """The policy decision for `call`, without recording or executing anything."""
        return self._decide(call, usage)[0]

    def _decide(self, call: ToolCall, usage: RunUsage | None) -> tuple[Decision, Policy | None]:
        """The decision and the policy snapshot it was made under (budgets come from the same
        snapshot, so an edit landing mid-call can never drop them)."""
        descriptor = self._registry.get(call.tool)
        registry_digest = self._registry.digest
        if descriptor is not None and descriptor.quarantine:
            # e.g. an MCP tool whose definition changed since it was pinned: no rule can allow it.
            return Decision(
                effect="block",
                rule_ids=(),
                reason=descriptor.quarantine,
                policy_digest="",
                registry_digest=registry_digest,
                message=f"{call.tool} is quarantined ({descriptor.quarantine}); nothing executed",
            ), None
        try:
            policy = self._policy.current()
        except Exception as exc:  # PolicyError, or anything a broken file provokes: fail closed
            return Decision(
                effect="block",
                rule_ids=(),
                reason="policy_unavailable",
                policy_digest="",
                registry_digest=registry_digest,
                message=f"the policy cannot be loaded, so every call is blocked: {exc}",
            ), None
        context = PolicyContext.for_call(
            call, descriptor, registry_digest=registry_digest, usage=usage
        )
        try:
            decision = (
                explain(context, policy).decision if self._evidence else evaluate(context, policy)
            )
        except Exception as exc:  # fail closed: a broken evaluator never allows
            return Decision(
                effect="block",
                rule_ids=(),
                reason="evaluator_error",
                policy_digest=policy.digest,
                registry_digest=registry_digest,
                message=f"policy evaluation failed ({type(exc).__name__}), so the call is blocked",
            ), policy
        if decision.effect == "allow" and descriptor is None:
            # Defence in depth: an unregistered name can never be allowed, whatever the policy.
            return Decision(
                effect="block",
                rule_ids=decision.rule_ids,
                reason="unknown_tool",
                policy_digest=decision.policy_digest,
                registry_digest=registry_digest,
                message=f"{call.tool!r} is not a registered tool",
            ), policy
        return decision, policy

    def call(self, call: ToolCall, *, usage: RunUsage | None = None) -> ToolResult:
        """Govern one call end to end. Never raises: refusals and failures are results."""
        attempt = _Attempt()
        self._local.batch = []
        try:
            result = self._govern(call, usage, attempt)
            self._flush()  # a refusal's records are written before the refusal is returned
            return result
        except Exception as exc:  # a bug or a broken collaborator: never a traceback, never a run
            if not isinstance(exc, _AuditFailed | AuditWriteError):
                try:
                    self._flush()  # keep what was decided before the failure, if it can be kept
                except Exception:
                    pass
            return _failure(call, exc, attempt)
        finally:
            self._local.batch = None

    def prepare(self, call: ToolCall) -> PreparedArguments:
        """The one form of `call.arguments` that is judged and executed (ArgumentRefused)."""
        descriptor = self._registry.get(call.tool)
        return prepare_arguments(
            descriptor.input_schema if descriptor is not None else None, call.arguments
        )

    def _govern(self, call: ToolCall, usage: RunUsage | None, attempt: _Attempt) -> ToolResult:
        descriptor = self._registry.get(call.tool)
        try:
            snapshot = snapshot_arguments(call.arguments)
        except ArgumentRefused as exc:  # not plain JSON: nothing of it can be judged or recorded
            self._record(call, "tool.requested", self._requested(call, usage, json=False))
            self._record(call, "call.rejected", {"reason": exc.reason, "error": str(exc)})
            return _rejected(call, exc.reason, f"refused arguments for {call.tool}: {exc}")
        # From here on only the snapshot exists: the caller's mapping is never read again.
        call = replace(call, arguments=snapshot)
        try:
            prepared = prepare_snapshot(
                descriptor.input_schema if descriptor is not None else None, snapshot
            )
        except ArgumentRefused as exc:  # a declared path with no single safe reading
            self._record(call, "tool.requested", self._requested(call, usage))
            decision = self._unsafe_argument(exc)
            self._record(call, "policy.decided", _decision_record(decision))
            return self._refusal(call, decision, "blocked", decision.reason, decision.message)
        call = replace(call, arguments=prepared.arguments)
        self._record(call, "tool.requested", self._requested(call, usage, prepared))
        if descriptor is not None:
            try:
                problem = self._schema_problem(descriptor, call.arguments)
            except SchemaRefused as exc:
                self._record(call, "call.rejected", {"reason": exc.reason, "error": str(exc)})
                return _rejected(call, exc.reason, f"{call.tool} cannot be checked: {exc}")
            if problem is not None:
                self._record(
                    call, "call.rejected", {"reason": "invalid_arguments", "error": problem}
                )
                return _rejected(
                    call, "invalid_arguments", f"invalid arguments for {call.tool}: {problem}"
                )

        decision, policy = self._decide(call, usage)
        self._record(call, "policy.decided", _decision_record(decision))
        if decision.effect == "block":
            return ToolResult(
                call_id=call.call_id,
                tool=call.tool,
                outcome="blocked",
                error=decision.message or f"blocked: {decision.reason}",
                reason=decision.reason,
                decision=decision,
            )
        if descriptor is None:
            # An unknown name never executes. With `unknown_tool: require_approval` it is
            # parked for a human to see; resuming it re-decides and blocks (no source exists).
            return self._hold(call, None, decision)
        # A hold only checks the budgets (asking a human is pointless if they are used up);
        # an allowed call reserves its slots atomically.
        gate = self._budget_gate(
            call, descriptor, decision, policy, reserve=decision.effect == "allow"
        )
        if isinstance(gate, ToolResult):
            return gate
        if decision.effect == "require_approval":
            return self._hold(call, descriptor, decision)
        return self._execute(call, decision, gate, policy, attempt)

    def _unsafe_argument(self, exc: ArgumentRefused) -> Decision:
        """The firewall's own block for an argument that has no safe reading (a path that
        escapes, or that two readers could resolve differently): no rule can allow it."""
        try:
            policy_digest = self._policy.current().digest
        except Exception:
            policy_digest = ""
        return Decision(
            effect="block",
            rule_ids=(),
            reason=exc.reason,
            policy_digest=policy_digest,
            registry_digest=self._registry.digest,
            message=f"{exc}; nothing was executed",
        )

    def _requested(
        self,
        call: ToolCall,
        usage: RunUsage | None,
        prepared: PreparedArguments | None = None,
        *,
        json: bool = True,
    ) -> dict[str, Any]:
        """The `tool.requested` record: the arguments as judged (`prepared`), as snapshotted
        when preparing them was refused, or nothing when they are not JSON at all (`json`)."""
        data: dict[str, Any] = {
            "arguments": dict(call.arguments) if json else None,
            "arguments_digest": self._audit.digest_arguments(call.arguments) if json else None,
            "principal": {
                "actor": call.principal.actor,
                "agent": call.principal.agent,
                "team": call.principal.team,
            },
            "tokens_used": (usage or RunUsage()).tokens_used,
        }
        if prepared is not None:
            data["defaults_applied"] = list(prepared.defaults_applied)
            data["canonicalised"] = list(prepared.canonicalised)
        return data

    # -- approvals --------------------------------------------------------------------------

    def _hold(
        self, call: ToolCall, descriptor: ToolDescriptor | None, decision: Decision
    ) -> ToolResult:
        if self._approvals is None:
            self._record(call, "approval.required", {"rule_ids": list(decision.rule_ids)})
            return self._refusal(call, decision, "held", decision.reason, _HELD_MESSAGE)
        # No request is parked for a call whose proposal and decision are not on the chain.
        self._flush()
        try:
            request = self._approvals.create(
                run_id=call.run_id,
                call_id=call.call_id,
                tool=call.tool,
                arguments=dict(call.arguments),
                arguments_digest=self._audit.digest_arguments(call.arguments),
                principal=call.principal,
                policy_digest=decision.policy_digest,
                rule_ids=decision.rule_ids,
                reason=decision.reason,
                risk=descriptor.risk if descriptor else "critical",
                awaiting="approval.required",
            )
        except Exception as exc:  # ApprovalStoreError, or a store failing in any other way
            # Nowhere to park the call, so nobody can approve it: fail closed.
            self._record(call, "approval.unavailable", {"error": str(exc)})
            return self._refusal(
                call,
                decision,
                "blocked",
                "approval_store_unavailable",
                "needs approval, but the approval store is unavailable; nothing was executed",
            )
        self._record(
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
                "arguments_digest": self._audit.digest_arguments(approved.effective_arguments),
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

    def _check_edit(self, request: ApprovalRequest, arguments: object) -> dict[str, Any]:
        """The edited arguments in the form that will execute, or EditRefused."""
        descriptor = self._registry.get(request.tool)
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
                invalid = self._schema_problem(descriptor, call.arguments)
            except (ArgumentRefused, SchemaRefused) as exc:
                problem = (exc.reason, f"the edited arguments are refused: {exc}")
            else:
                if invalid is not None:
                    problem = ("invalid_arguments", f"the edited arguments are invalid: {invalid}")
        if problem is None:
            decision = self.decide(call)
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

    def resume_held(
        self, approval_id: str, call: ToolCall, *, usage: RunUsage | None = None
    ) -> ToolResult:
        """Execute a held call once its request is approved - re-verified, never trusted.

        Checks the request still matches this call (tool, run, arguments digest), is approved,
        unexpired and unused, and re-evaluates policy: if policy changed while the request was
        pending and now blocks, nothing executes. Rejected or expired: a refused result.
        """
        attempt = _Attempt()
        try:
            return self._resume(approval_id, call, usage, attempt)
        except Exception as exc:  # never a traceback: refused, or "may have run" once started
            return replace(_failure(call, exc, attempt), approval_id=approval_id)

    def _resume(
        self, approval_id: str, call: ToolCall, usage: RunUsage | None, attempt: _Attempt
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
            self._record(call, "approval.refused", {"approval_id": approval_id, "reason": reason})
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
            self._record(call, "approval.refused", {"approval_id": approval_id, "reason": doubt})
            return self._approval_refusal(call, approval_id, doubt, None)
        # The held call was judged in its prepared form; compare like with like. What executes
        # is bound to the request: its arguments (prepared again, by the same function) and
        # its proposing principal.
        try:
            call = replace(call, arguments=self.prepare(call).arguments)
            execute = replace(
                call,
                arguments=self.prepare(
                    replace(call, arguments=request.effective_arguments)
                ).arguments,
                principal=Principal(request.actor, request.agent, request.team),
            )
        except ArgumentRefused as exc:
            self._record(
                call, "approval.refused", {"approval_id": approval_id, "reason": exc.reason}
            )
            return self._approval_refusal(call, approval_id, exc.reason, exc)
        mismatch = self._approval_mismatch(request, call)
        if mismatch is not None:
            self._record(call, "approval.refused", {"approval_id": approval_id, "reason": mismatch})
            return self._approval_refusal(call, approval_id, mismatch, None)
        decision, policy = self._decide(execute, usage)
        self._record(call, "policy.rechecked", _decision_record(decision))
        if decision.effect == "block":
            self._record(call, "approval.revoked", _decision_record(decision))
            return self._refusal(
                execute,
                decision,
                "blocked",
                decision.reason,
                f"approved, but policy now blocks it: {decision.message}; nothing was executed",
                approval_id=approval_id,
            )
        descriptor = self._registry.get(call.tool)
        if descriptor is None:  # approved or not, an unregistered name has nothing to execute
            self._record(
                call, "approval.refused", {"approval_id": approval_id, "reason": "unknown_tool"}
            )
            return self._approval_refusal(call, approval_id, "unknown_tool", None)
        reservation = self._budget_gate(execute, descriptor, decision, policy, reserve=True)
        if isinstance(reservation, ToolResult):
            return replace(reservation, approval_id=approval_id)
        try:
            won = store.consume(approval_id, awaiting="execution")
        except ApprovalError as exc:
            self._settle(reservation, "released")
            return self._approval_refusal(call, approval_id, "approval_store_unavailable", exc)
        if not won:
            self._settle(reservation, "released")
            self._record(call, "approval.refused", {"approval_id": approval_id, "reason": "used"})
            return self._approval_refusal(call, approval_id, "approval_already_used", None)
        self._record(call, "approval.consumed", {"approval_id": approval_id})
        result = self._execute(execute, decision, reservation, policy, attempt)
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
        if self._audit.digest_arguments(request.arguments) != request.arguments_digest:
            return "approval_arguments_tampered"
        if self._audit.digest_arguments(call.arguments) != request.arguments_digest:
            return "approval_mismatch"
        if request.expires_at <= self._approvals_now():
            return "approval_expired"
        return None

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

    # -- budgets ----------------------------------------------------------------------------

    def _budget_gate(
        self,
        call: ToolCall,
        descriptor: ToolDescriptor,
        decision: Decision,
        policy: Policy | None,
        *,
        reserve: bool,
    ) -> BudgetReservation | ToolResult | None:
        """Reserve (or only check) every budget that applies to this call.

        A refusal (a budget is used up, or the store is down: fail closed) comes back as the
        blocked result; otherwise the reservation to settle after dispatch, or None.
        """
        if policy is None:  # no snapshot means decide() blocked; never reached for allow/hold
            return self._refusal(call, decision, "blocked", "policy_unavailable", decision.message)
        budgets = tuple(
            b for b in policy.budgets if b.applies_to(descriptor.name, descriptor.impact)
        )
        if not budgets:
            return None
        if self._budgets is None:
            return self._refusal(
                call,
                decision,
                "blocked",
                "budget_store_unavailable",
                "a budget applies but no budget store is configured; nothing was executed",
            )
        outcome: BudgetReservation | BudgetDenial | None
        try:
            if reserve:
                outcome = self._budgets.reserve(call, descriptor.impact, budgets)
            else:
                outcome = self._budgets.check(call, descriptor.impact, budgets)
        except BudgetStoreError as exc:
            self._record(call, "budget.denied", {"reason": "budget_store_unavailable"})
            return self._refusal(
                call,
                decision,
                "blocked",
                "budget_store_unavailable",
                f"the budget store is unavailable, so the call is blocked ({exc})",
            )
        if isinstance(outcome, BudgetDenial):
            self._record(
                call,
                "budget.denied",
                {
                    "budget_id": outcome.budget_id,
                    "scope": outcome.scope,
                    "key": outcome.key,
                    "used": outcome.used,
                    "limit": outcome.limit,
                    "reason": outcome.reason,
                },
            )
            denied = replace(
                decision,
                effect="block",
                rule_ids=(outcome.budget_id,),
                reason=outcome.reason,
                message=f"budget {outcome.budget_id} ({outcome.scope}={outcome.key}) is used up: "
                f"{outcome.used}/{outcome.limit}; two operators must reset it",
            )
            return self._refusal(call, denied, "blocked", outcome.reason, denied.message)
        return outcome

    def _settle(self, reservation: BudgetReservation | None, outcome: str) -> None:
        if reservation is None or self._budgets is None:
            return
        try:
            self._budgets.settle(reservation, outcome)  # type: ignore[arg-type]
        except Exception:  # BudgetStoreError or worse: never turn an outcome into a traceback
            pass  # an unsettled reservation keeps counting: the safe direction

    def _refusal(
        self,
        call: ToolCall,
        decision: Decision,
        outcome: Outcome,
        reason: str,
        message: str,
        *,
        approval_id: str | None = None,
    ) -> ToolResult:
        return ToolResult(
            call_id=call.call_id,
            tool=call.tool,
            outcome=outcome,
            error=message,
            reason=reason,
            decision=decision,
            approval_id=approval_id,
        )

    def _execute(
        self,
        call: ToolCall,
        decision: Decision,
        reservation: BudgetReservation | None = None,
        policy: Policy | None = None,
        attempt: _Attempt | None = None,
    ) -> ToolResult:
        source = self._registry._source_for(call.tool)
        if source is None:  # unreachable while decide() holds; kept so it can never execute
            self._settle(reservation, "released")
            return ToolResult(
                call_id=call.call_id, tool=call.tool, outcome="blocked", reason="unknown_tool"
            )
        # Write-ahead: if this record cannot be written, nothing executes.
        try:
            self._record(call, "execution.started", {"source": source.name})
        except _AuditFailed:
            self._settle(reservation, "released")
            raise
        if attempt is not None:
            attempt.started = True
        try:
            # The tool gets its own deep copy of the judged snapshot, so nothing it does to
            # its arguments can change what was recorded or what a retry would be judged on.
            result = source.call(replace(call, arguments=copy.deepcopy(dict(call.arguments))))
        except Exception as exc:  # a source that raises is a failed call, never a dead run
            result = ToolResult(
                call_id=call.call_id,
                tool=call.tool,
                outcome="failed",
                error=f"{type(exc).__name__}: {exc}",
                reason="tool_error",
            )
        # Tool text is untrusted: its secrets are screened before anything else sees it.
        outputs = policy.outputs if policy is not None else OutputPolicy()
        result, secrets = screen_secrets(result, outputs)
        result = self._cap(result, decision)
        if result.outcome == "executed":
            self._settle(reservation, "executed")
        elif result.reason in _UNKNOWN_EFFECT_REASONS:
            self._settle(reservation, "unknown")  # the effect may have landed: keep counting
        else:
            self._settle(reservation, "released")  # refused before any effect
        try:
            self._record_outcome(call, result, secrets)
        except _AuditFailed as exc:
            # The tool ran: never report it as "not executed" (the agent might retry it).
            note = f"executed, but the audit log could not record the outcome ({exc})"
            return replace(result, reason="audit_incomplete", error=note)
        return result

    def _record_outcome(
        self, call: ToolCall, result: ToolResult, secrets: Mapping[str, Any] | None = None
    ) -> None:
        # Named `redaction`: the audit log masks the value of any key that says "secret".
        found = {"redaction": dict(secrets)} if secrets else {}
        if result.outcome == "executed":
            self._record(
                call,
                "execution.completed",
                {
                    "output_digest": digest(result.output),
                    "output_chars": len(result.output),
                    "truncated": result.truncated,
                    **found,
                },
            )
        else:
            self._record(
                call,
                "execution.failed",
                {"reason": result.reason, "error": result.error, **found},
            )

    def _cap(self, result: ToolResult, decision: Decision) -> ToolResult:
        output = result.output
        truncated = result.truncated
        if len(output) > self._max_result_chars:
            output = output[: self._max_result_chars]
            truncated = True
        return ToolResult(
            call_id=result.call_id,
            tool=result.tool,
            outcome=result.outcome if result.outcome in ("executed", "failed") else "failed",
            output=output,
            error=result.error,
            reason=result.reason,
            truncated=truncated,
            decision=decision,
            approval_id=result.approval_id,
        )

    def _schema_problem(
        self, descriptor: ToolDescriptor, arguments: Mapping[str, Any]
    ) -> str | None:
        """The first way `arguments` fail the tool's schema, or None; SchemaRefused when the
        schema itself cannot be used (invalid, remote or dangling `$ref`, pathological)."""
        validator = self._validators.get(descriptor.name)
        if validator is None:
            validator = local_validator(descriptor.input_schema)
            self._validators[descriptor.name] = validator
        return first_problem(validator, arguments)

    def _record_for(self, request: ApprovalRequest, kind: str, data: Mapping[str, Any]) -> None:
        principal = Principal(request.actor, request.agent, request.team)
        call = ToolCall(request.call_id, request.tool, {}, request.run_id, principal)
        try:
            self._record(call, kind, data)
        except _AuditFailed as exc:
            raise AuditWriteError(str(exc)) from exc

    def _record(self, call: ToolCall, kind: str, data: Mapping[str, Any]) -> None:
        """Record one event: held in this call's batch, or written now with whatever the batch
        holds (one transaction). Raises _AuditFailed when the write fails."""
        payload = {"call_id": call.call_id, "tool": call.tool, **data}
        event = LifecycleEvent(
            kind=kind, run_id=call.run_id, call_id=call.call_id, tool=call.tool, data=data
        )
        batch: list[tuple[LifecycleEvent, Mapping[str, Any]]] | None = getattr(
            self._local, "batch", None
        )
        if batch is not None and kind in _BATCHED:
            batch.append((event, payload))
            return
        pending = [*batch, (event, payload)] if batch else [(event, payload)]
        if batch:
            batch.clear()  # written now or never: a failed write must not be retried later
        self._write(pending)

    def _flush(self) -> None:
        """Write this call's held events, if any (one transaction)."""
        batch: list[tuple[LifecycleEvent, Mapping[str, Any]]] | None = getattr(
            self._local, "batch", None
        )
        if batch:
            pending = list(batch)
            batch.clear()
            self._write(pending)

    def _write(self, pending: Sequence[tuple[LifecycleEvent, Mapping[str, Any]]]) -> None:
        run_id = pending[0][0].run_id
        append_many = getattr(self._audit, "append_many", None)
        try:
            if len(pending) == 1 or append_many is None:
                for event, payload in pending:
                    self._audit.append(event.run_id, event.kind, payload)
            elif any(event.run_id != run_id for event, _ in pending):
                raise AuditWriteError("one batch of audit events spans two runs")
            else:
                append_many(run_id, [(event.kind, payload) for event, payload in pending])
        except AuditWriteError as exc:
            raise _AuditFailed(str(exc)) from exc
        for event, _ in pending:
            for observer in self._observers:
                try:
                    observer(event)
                except Exception:  # an observer watches; it never decides or interrupts a call
                    pass


_HELD_MESSAGE = "held for human approval; nothing was executed"


def _result(call: ToolCall, outcome: Outcome, reason: str, error: str) -> ToolResult:
    """A result with no output and no decision: the firewall's own failure or refusal."""
    return ToolResult(
        call_id=call.call_id, tool=call.tool, outcome=outcome, error=error, reason=reason
    )


def _rejected(call: ToolCall, reason: str, message: str) -> ToolResult:
    """Refused before any decision (arguments or schema unusable): failed, nothing executed."""
    return _result(call, "failed", reason, message)


def _failure(call: ToolCall, exc: Exception, attempt: _Attempt) -> ToolResult:
    """What an exception inside the firewall becomes: once the tool may have run, never "not
    executed"; before, an audit failure is `audit_unavailable` and anything else a fail-closed
    refusal (`firewall_error`)."""
    if attempt.started:
        error = f"the tool may have run, but its outcome could not be recorded ({exc})"
        return _result(call, "failed", "outcome_unknown", error)
    if isinstance(exc, _AuditFailed | AuditWriteError):  # the write-ahead record failed
        error = f"not executed: the audit log could not record the call ({exc})"
        return _result(call, "failed", "audit_unavailable", error)
    error = f"not executed: the firewall could not decide this call ({type(exc).__name__})"
    return _result(call, "blocked", "firewall_error", error)


def _approval_doubt(request: ApprovalRequest) -> str | None:
    """Why an approved request cannot be trusted to run, before anything else is checked."""
    if request.arguments_problem is not None:
        return request.arguments_problem  # sealed arguments tampered, missing or keyless
    if request.in_doubt is not None:
        return "approval_in_doubt"  # a crash left its row and the audit chain disagreeing
    if request.in_flight is not None and not request.consumed:
        return "approval_unrecorded"  # the decision is not yet on the audit chain
    return None


def _decision_record(decision: Decision) -> dict[str, Any]:
    return {
        "effect": decision.effect,
        "rule_ids": list(decision.rule_ids),
        "reason": decision.reason,
        "policy_digest": decision.policy_digest,
        "registry_digest": decision.registry_digest,
    }
