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

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from governance._approval_flow import ApprovalFlow
from governance._call_decision import (
    policy_decision,
    prepared_arguments,
    quarantined,
    unsafe_argument,
)
from governance._call_results import (
    Attempt,
    AuditFailed,
    decision_record,
    failure,
    refusal,
    rejected,
)
from governance._run_taint import RunTaint
from governance.arguments._schema_checks import SchemaChecks, schema_checks
from governance.arguments._schemas import SchemaRefused, first_problem
from governance.arguments._snapshot import (
    ArgumentPlan,
    ArgumentRefused,
    PreparedArguments,
    argument_plan,
    copy_snapshot,
    prepare_arguments,
    snapshot_arguments,
)
from governance.core._canonical import digest
from governance.core._contracts import (
    Decision,
    RunUsage,
    ToolCall,
    ToolDescriptor,
    ToolResult,
)
from governance.core._errors import AuditWriteError
from governance.policy._compile import Policy
from governance.screening._injection import (
    UNTRUSTED_SOURCE,
    Screener,
    output_findings,
    untrusted_text,
)
from governance.screening._output_secrets import OutputPolicy, screen_secrets
from governance.stores._approvals import ApprovalRequest
from governance.stores._backends import ApprovalBackend, BudgetBackend
from governance.stores._budgets import (
    BudgetDenial,
    BudgetReservation,
    BudgetStoreError,
    SettleOutcome,
)
from governance.tools._registry import ToolRegistry

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
    "approval.cancelled",
    "approval.expired",
)

# What the agent loop records about a run (not about one call), through `record_run_event`.
RUN_EVENTS = (
    "run.started",
    "run.resumed",
    "run.finished",
    "provider.error",
    "guardrail.rejected",
    "guardrail.flagged",
    "guardrail.claims_flagged",
    "loop.repeated_call",
    "call.rejected",
)

# Held back and written with the next event that is not one of them (`execution.started`, an
# approval event) or when the call returns: all of them come before any tool runs.
_BATCHED = frozenset({"tool.requested", "call.rejected", "policy.decided", "budget.denied"})

# After dispatch, a failure is an unknown effect (`timeout`, `tool_error`, `connection_lost`,
# `cancelled`, `outcome_unknown`, `not_found`, any reason at all): the side effect may have
# landed, so the budget slot stays counted and the audit says `effect: unknown`. A reason is
# only a string a tool or a remote server chose: it never releases a slot. Released (audit
# `effect: none`) is only a failure that trusted code marks `before_effect`: a source's own
# gate that sent nothing (LocalToolSource's argument check, the MCP client's unknown tool,
# changed definition or no connection) and the built-in tools' checks before any change (a
# `ToolExecutionError(..., before_effect=True)`). Refusals before dispatch (schema, policy,
# budget, approval) never reach a source and release their slot where they happen.


def effect_of(result: ToolResult) -> SettleOutcome:
    """What became of a dispatched call, for its budget slot: `executed`, `unknown` (it may have
    landed: counted) or `released` (refused before any effect). Fails closed: only a failure
    marked `before_effect` is released; its reason is never consulted."""
    if result.outcome == "executed":
        return "executed"
    return "released" if result.before_effect else "unknown"


class PolicySource(Protocol):
    """Hands out the policy in force right now (a file that may have been edited)."""

    def current(self) -> Policy: ...


class AuditSink(Protocol):
    """Where the write-ahead record goes. `append` raises AuditWriteError when it cannot write.

    A sink that also has `append_many(run_id, [(kind, data), ...])` (all or nothing, one
    transaction: see governance.stores._backends.AuditBackend) gets each call's batch in one write.
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
    """One step of one call, or one run event (`run.started`, ...: `call_id` and `tool` are
    empty), as recorded on the audit chain and handed to observers. `at_ns`: time.time_ns()
    when the firewall recorded it (a held event is stamped when recorded, not when written)."""

    kind: str
    run_id: str
    call_id: str
    tool: str
    data: Mapping[str, Any] = field(default_factory=dict)
    at_ns: int = 0


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
        waiter: str | None = None,
        screener: Screener | None = None,
        taint: RunTaint | None = None,
    ) -> None:
        """`waiter`: the process token of the caller that waits in this process for the
        decisions on the calls it holds (see ApprovalFlow); None holds them detached.
        `taint`: another firewall's memory of tainted runs, when both judge calls of the same
        runs over the same audit log (the LiteLLM guardrail's response firewall)."""
        if max_result_chars < 1:
            raise ValueError("max_result_chars must be positive")
        self._registry = registry
        self._policy = policy
        self._audit = audit
        self._max_result_chars = max_result_chars
        self._observers = list(observers)
        self._validators: dict[str, SchemaChecks] = {}
        # Each tool's argument plan (defaults, declared paths), read from its schema once; kept
        # with the descriptor it was read from, so a re-registered tool gets a fresh one.
        self._plans: dict[str, tuple[ToolDescriptor, ArgumentPlan]] = {}
        self._approvals = approvals
        self._budgets = budgets
        # With evidence, every decision carries which rules matched and were decisive (what
        # policy coverage is measured from); without, the indexed fast path decides.
        self._evidence = evidence
        self._local = threading.local()  # .batch: this thread's held events, inside call()
        self._flow = ApprovalFlow(_Steps(self), approvals, waiter=waiter)
        # What reads tool outputs for injected instructions (None: the heuristic default).
        self._screener = screener
        # Runs whose calls returned untrusted text: decided as tainted whatever the caller says.
        self._taint = taint if taint is not None else RunTaint(getattr(audit, "events", None))

    @property
    def registry(self) -> ToolRegistry:
        return self._registry

    @property
    def taint(self) -> RunTaint:
        """Which runs this firewall knows read untrusted text (share it, never copy it)."""
        return self._taint

    def add_observer(self, observer: Callable[[LifecycleEvent], None]) -> None:
        self._observers.append(observer)

    def list_tools(self) -> list[ToolDescriptor]:
        return self._registry.descriptors()

    def decide(self, call: ToolCall, usage: RunUsage | None = None) -> Decision:
        """The decision `call` would get from `call()`, without recording or executing anything:
        its arguments are prepared exactly as `call()` prepares them (snapshot, the schema's
        defaults, canonical paths: the tool's cached plan), and arguments with no safe reading
        get the block `call()` records. The schema is not checked here: `call()` rejects a call
        that fails it before any decision, and budgets are not consulted."""
        descriptor = self._registry.get(call.tool)
        try:
            prepared = self._prepared(descriptor, snapshot_arguments(call.arguments))
        except ArgumentRefused as exc:
            return self._unsafe_argument(exc)
        return self._decide(call.with_arguments(prepared.arguments), usage)[0]

    def _prepared(
        self, descriptor: ToolDescriptor | None, snapshot: dict[str, Any]
    ) -> PreparedArguments:
        """The one form of a snapshot that is judged and executed (ArgumentRefused)."""
        plan = self._argument_plan(descriptor) if descriptor is not None else None
        return prepared_arguments(descriptor, snapshot, plan)

    def _decide(
        self, call: ToolCall, usage: RunUsage | None, *, review: bool = False
    ) -> tuple[Decision, Policy | None]:
        """The decision and the policy snapshot it was made under (budgets come from the same
        snapshot, so an edit landing mid-call can never drop them). A run this firewall saw read
        untrusted text is decided as tainted (with `review`, a resumed or edited held call, its
        audit chain is read too: the call may have been held by another process)."""
        usage = self._taint.usage(call.run_id, usage, read_chain=review)
        descriptor = self._registry.get(call.tool)
        registry_digest = self._registry.digest
        if descriptor is not None and descriptor.quarantine:
            return quarantined(call, descriptor, registry_digest), None
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
        decision = policy_decision(
            call,
            descriptor,
            policy,
            registry_digest=registry_digest,
            usage=usage,
            evidence=self._evidence,
        )
        return decision, policy

    def call(self, call: ToolCall, *, usage: RunUsage | None = None) -> ToolResult:
        """Govern one call end to end. Never raises: refusals and failures are results."""
        attempt = Attempt()
        self._local.batch = []
        try:
            result = self._govern(call, usage, attempt)
            self._flush()  # a refusal's records are written before the refusal is returned
            return result
        except Exception as exc:  # a bug or a broken collaborator: never a traceback, never a run
            if not isinstance(exc, AuditFailed | AuditWriteError):
                try:
                    self._flush()  # keep what was decided before the failure, if it can be kept
                except Exception:
                    pass
            return failure(call, exc, attempt)
        finally:
            self._local.batch = None

    def prepare(self, call: ToolCall) -> PreparedArguments:
        """The one form of `call.arguments` that is judged and executed (ArgumentRefused)."""
        descriptor = self._registry.get(call.tool)
        return prepare_arguments(
            descriptor.input_schema if descriptor is not None else None, call.arguments
        )

    def _govern(self, call: ToolCall, usage: RunUsage | None, attempt: Attempt) -> ToolResult:
        descriptor = self._registry.get(call.tool)
        try:
            snapshot = snapshot_arguments(call.arguments)
        except ArgumentRefused as exc:  # not plain JSON: nothing of it can be judged or recorded
            self._record(call, "tool.requested", self._requested(call, usage, json=False))
            self._record(call, "call.rejected", {"reason": exc.reason, "error": str(exc)})
            return rejected(call, exc.reason, f"refused arguments for {call.tool}: {exc}")
        # From here on only the snapshot exists: the caller's mapping is never read again.
        call = call.with_arguments(snapshot)
        try:
            prepared = self._prepared(descriptor, snapshot)
        except ArgumentRefused as exc:  # a declared path with no single safe reading
            self._record(call, "tool.requested", self._requested(call, usage))
            decision = self._unsafe_argument(exc)
            self._record(call, "policy.decided", decision_record(decision))
            return refusal(call, decision, "blocked", decision.reason, decision.message)
        call = call.with_arguments(prepared.arguments)
        self._record(call, "tool.requested", self._requested(call, usage, prepared))
        if descriptor is not None:
            try:
                problem = self._schema_problem(descriptor, call.arguments)
            except SchemaRefused as exc:
                self._record(call, "call.rejected", {"reason": exc.reason, "error": str(exc)})
                return rejected(call, exc.reason, f"{call.tool} cannot be checked: {exc}")
            if problem is not None:
                self._record(
                    call, "call.rejected", {"reason": "invalid_arguments", "error": problem}
                )
                return rejected(
                    call, "invalid_arguments", f"invalid arguments for {call.tool}: {problem}"
                )

        decision, policy = self._decide(call, usage)
        self._record(call, "policy.decided", decision_record(decision))
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
            return self._flow.hold(call, None, decision)
        # A hold only checks the budgets (asking a human is pointless if they are used up);
        # an allowed call reserves its slots atomically.
        gate = self._budget_gate(
            call, descriptor, decision, policy, reserve=decision.effect == "allow"
        )
        if isinstance(gate, ToolResult):
            return gate
        if decision.effect == "require_approval":
            return self._flow.hold(call, descriptor, decision)
        return self._execute(call, decision, gate, policy, attempt)

    def _unsafe_argument(self, exc: ArgumentRefused) -> Decision:
        """The firewall's own block for an argument that has no safe reading (a path that
        escapes, or that two readers could resolve differently): no rule can allow it."""
        try:
            policy_digest = self._policy.current().digest
        except Exception:
            policy_digest = ""
        return unsafe_argument(exc, policy_digest, self._registry.digest)

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
            "tokens_used": usage.tokens_used if usage is not None else 0,
        }
        if prepared is not None:
            data["defaults_applied"] = list(prepared.defaults_applied)
            data["canonicalised"] = list(prepared.canonicalised)
        return data

    # -- approvals: the flow lives in governance._approval_flow ------------------------------

    def approve(
        self,
        approval_id: str,
        reviewer: str,
        *,
        arguments: Mapping[str, Any] | None = None,
        comment: str | None = None,
    ) -> ApprovalRequest:
        """Approve a held call, optionally with edited arguments (re-checked first: EditRefused
        when they fail the schema, policy blocks them or they bring in stricter rules)."""
        return self._flow.approve(approval_id, reviewer, arguments=arguments, comment=comment)

    def reject(self, approval_id: str, reviewer: str, *, comment: str) -> ApprovalRequest:
        return self._flow.reject(approval_id, reviewer, comment=comment)

    def withdraw(self, approval_id: str, *, by: str, reason: str) -> ApprovalRequest:
        """Cancel a pending request its caller stopped waiting for (ApprovalConflict if it was
        decided meanwhile); audited as `approval.cancelled`."""
        return self._flow.withdraw(approval_id, by=by, reason=reason)

    def resume_held(
        self, approval_id: str, call: ToolCall, *, usage: RunUsage | None = None
    ) -> ToolResult:
        """Execute a held call once its request is approved - re-verified, never trusted."""
        return self._flow.resume(approval_id, call, usage=usage)

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
            return refusal(call, decision, "blocked", "policy_unavailable", decision.message)
        budgets = tuple(
            b for b in policy.budgets if b.applies_to(descriptor.name, descriptor.impact)
        )
        if not budgets:
            return None
        if self._budgets is None:
            return refusal(
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
            return refusal(
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
            return refusal(call, denied, "blocked", outcome.reason, denied.message)
        return outcome

    def _settle(self, reservation: BudgetReservation | None, outcome: str) -> None:
        if reservation is None or self._budgets is None:
            return
        try:
            self._budgets.settle(reservation, outcome)  # type: ignore[arg-type]
        except Exception:  # BudgetStoreError or worse: never turn an outcome into a traceback
            pass  # an unsettled reservation keeps counting: the safe direction

    def _execute(
        self,
        call: ToolCall,
        decision: Decision,
        reservation: BudgetReservation | None = None,
        policy: Policy | None = None,
        attempt: Attempt | None = None,
    ) -> ToolResult:
        source = self._registry._source_for(call.tool)
        if source is None:  # unreachable while decide() holds; kept so it can never execute
            self._settle(reservation, "released")
            return ToolResult(
                call_id=call.call_id,
                tool=call.tool,
                outcome="blocked",
                reason="unknown_tool",
                before_effect=True,
            )
        # Write-ahead: if this record cannot be written, nothing executes.
        try:
            self._record(call, "execution.started", {"source": source.name})
        except AuditFailed:
            self._settle(reservation, "released")
            raise
        if attempt is not None:
            attempt.started = True
        try:
            # The tool gets its own deep copy of the judged snapshot, so nothing it does to
            # its arguments can change what was recorded or what a retry would be judged on.
            result = source.call(call.with_arguments(copy_snapshot(dict(call.arguments))))
        except Exception as exc:  # a source that raises is a failed call, never a dead run
            result = ToolResult(
                call_id=call.call_id,
                tool=call.tool,
                outcome="failed",
                error=f"{type(exc).__name__}: {exc}",
                reason="tool_error",
            )
        except BaseException as exc:  # cancelled or interrupted mid-call: it may have landed
            self._interrupted(call, reservation, exc)
            raise
        # Settled before anything else can fail: what the tool did is decided by now.
        effect = effect_of(result)
        self._settle(reservation, effect)
        # Tool text is untrusted: its secrets are screened before anything else sees it.
        outputs = policy.outputs if policy is not None else OutputPolicy()
        result, secrets = screen_secrets(result, outputs)
        result = self._cap(result, decision)
        # ...and its injection-shaped text is flagged: the model will read it, so the run that
        # reads it is tainted (the loop marks it; later calls are decided as tainted).
        injected = output_findings(result, self._screener)
        descriptor = self._registry.get(call.tool)
        if descriptor is not None and descriptor.untrusted_output and untrusted_text(result):
            # Provenance, not content: a third party wrote this text (output, or the error text
            # of a call that failed), whatever it looks like.
            injected = (UNTRUSTED_SOURCE, *injected)
        if injected:
            result = replace(result, findings=injected)
            self._taint.mark(call.run_id)
        try:
            self._record_outcome(call, result, secrets, effect)
        except AuditFailed as exc:
            # The tool ran: never report it as "not executed" (the agent might retry it).
            note = f"executed, but the audit log could not record the outcome ({exc})"
            return replace(result, reason="audit_incomplete", error=note)
        return result

    def record_run_event(self, run_id: str, kind: str, data: Mapping[str, Any]) -> None:
        """Record a run-level event (the loop's: run.started, provider.error, ...) on the same
        chain as the calls, written by this one writer. Call lifecycle kinds are the firewall's
        alone: asking for one is a ValueError. A failed write raises AuditWriteError."""
        if kind not in RUN_EVENTS:
            raise ValueError(f"{kind!r} is not a run event; use one of {', '.join(RUN_EVENTS)}")
        self._audit.append(run_id, kind, data)
        if self._observers:
            self._notify(LifecycleEvent(kind, run_id, "", "", data, time.time_ns()))

    def _interrupted(
        self, call: ToolCall, reservation: BudgetReservation | None, exc: BaseException
    ) -> None:
        """A cancellation (task cancelled, Ctrl-C) while the tool ran: the slot stays counted and
        the outcome is recorded as unknown, if it can be, before the interruption goes on."""
        self._settle(reservation, "unknown")
        stopped = ToolResult(
            call_id=call.call_id,
            tool=call.tool,
            outcome="failed",
            error=f"interrupted while the tool ran ({type(exc).__name__}); it may have run",
            reason="cancelled",
        )
        try:
            self._record_outcome(call, stopped, None, "unknown")
        except Exception:
            pass  # the interruption wins; the missing outcome reads as in doubt on the chain

    def _record_outcome(
        self,
        call: ToolCall,
        result: ToolResult,
        secrets: Mapping[str, Any] | None = None,
        effect: SettleOutcome = "unknown",
    ) -> None:
        """The outcome, and what the output screen found in it, in one write (one commit)."""
        # Named `redaction`: the audit log masks the value of any key that says "secret".
        found = {"redaction": dict(secrets)} if secrets else {}
        events: list[tuple[str, Mapping[str, Any]]]
        if result.outcome == "executed":
            data = {
                "output_digest": digest(result.output),
                "output_chars": len(result.output),
                "truncated": result.truncated,
                **found,
            }
            events = [("execution.completed", data)]
        else:
            # `effect`: unknown (it may have landed; its budget slot stays counted) or none.
            shown = "none" if effect == "released" else "unknown"
            failed = {"reason": result.reason, "error": result.error, "effect": shown, **found}
            events = [("execution.failed", failed)]
        if result.findings:
            flagged = {"stage": "tool_output", "findings": list(result.findings)}
            events.append(("guardrail.flagged", flagged))
        self._record_all(call, events)

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
            before_effect=result.before_effect,
        )

    def _argument_plan(self, descriptor: ToolDescriptor) -> ArgumentPlan:
        kept = self._plans.get(descriptor.name)
        if kept is not None and kept[0] is descriptor:
            return kept[1]
        plan = argument_plan(descriptor.input_schema)
        self._plans[descriptor.name] = (descriptor, plan)
        return plan

    def _schema_problem(
        self, descriptor: ToolDescriptor, arguments: Mapping[str, Any]
    ) -> str | None:
        """The first way `arguments` fail the tool's schema, or None; SchemaRefused when the
        schema itself cannot be used (invalid, remote or dangling `$ref`, pathological)."""
        checks = self._validators.get(descriptor.name)
        if checks is None:
            checks = self._validators[descriptor.name] = schema_checks(descriptor)
        validator, proof = checks
        if proof is not None and proof(arguments):
            return None  # proven valid the way jsonschema reads the schema (see _schema_proof)
        return first_problem(validator, arguments)

    def _record(self, call: ToolCall, kind: str, data: Mapping[str, Any]) -> None:
        """Record one event (see `_record_all`)."""
        self._record_all(call, [(kind, data)])

    def _record_all(self, call: ToolCall, events: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """Record events of one call, in order: held in this call's batch when every one of
        them is a held kind, else written now with whatever the batch holds (one transaction).
        Raises AuditFailed when the write fails."""
        at_ns = time.time_ns() if self._observers else 0  # nobody watching: no clock read
        records: list[_Pending] = [
            (call, kind, data, {"call_id": call.call_id, "tool": call.tool, **data}, at_ns)
            for kind, data in events
        ]
        batch: list[_Pending] | None = getattr(self._local, "batch", None)
        if batch is not None and all(kind in _BATCHED for kind, _ in events):
            batch.extend(records)
            return
        pending = [*batch, *records] if batch else records
        if batch:
            batch.clear()  # written now or never: a failed write must not be retried later
        self._write(pending)

    def _flush(self) -> None:
        """Write this call's held events, if any (one transaction)."""
        batch: list[_Pending] | None = getattr(self._local, "batch", None)
        if batch:
            pending = list(batch)
            batch.clear()
            self._write(pending)

    def _write(self, pending: Sequence[_Pending]) -> None:
        run_id = pending[0][0].run_id
        append_many = getattr(self._audit, "append_many", None)
        try:
            if len(pending) == 1 or append_many is None:
                for call, kind, _, payload, _ in pending:
                    self._audit.append(call.run_id, kind, payload)
            elif any(call.run_id != run_id for call, _, _, _, _ in pending):
                raise AuditWriteError("one batch of audit events spans two runs")
            else:
                append_many(run_id, [(kind, payload) for _, kind, _, payload, _ in pending])
        except AuditWriteError as exc:
            raise AuditFailed(str(exc)) from exc
        if not self._observers:
            return
        for call, kind, data, _, at_ns in pending:
            # Positional: a frozen dataclass built from keywords costs twice as much, per event.
            self._notify(LifecycleEvent(kind, call.run_id, call.call_id, call.tool, data, at_ns))

    def _notify(self, event: LifecycleEvent) -> None:
        for observer in self._observers:
            try:
                observer(event)
            except Exception:  # an observer watches; it never decides or interrupts a call
                pass


# One held or written event: the call it belongs to, its kind, its data, the audit payload
# (the data with the call's id and tool) and when it was recorded (0 when nobody observes).
# Observers get a LifecycleEvent, built only for them.
_Pending = tuple[ToolCall, str, Mapping[str, Any], Mapping[str, Any], int]


class _Steps:
    """The firewall's steps as the approval flow sees them (governance._approval_flow.CallSteps):
    a resumed call is decided, budgeted, recorded and executed by this firewall's own code."""

    __slots__ = ("_firewall",)

    def __init__(self, firewall: Firewall) -> None:
        self._firewall = firewall

    @property
    def registry(self) -> ToolRegistry:
        return self._firewall.registry

    def decide_under_policy(
        self, call: ToolCall, usage: RunUsage | None
    ) -> tuple[Decision, Policy | None]:
        return self._firewall._decide(call, usage, review=True)

    def prepare(self, call: ToolCall) -> PreparedArguments:
        return self._firewall.prepare(call)

    def schema_problem(
        self, descriptor: ToolDescriptor, arguments: Mapping[str, Any]
    ) -> str | None:
        return self._firewall._schema_problem(descriptor, arguments)

    def budget_gate(
        self,
        call: ToolCall,
        descriptor: ToolDescriptor,
        decision: Decision,
        policy: Policy | None,
        *,
        reserve: bool,
    ) -> BudgetReservation | ToolResult | None:
        return self._firewall._budget_gate(call, descriptor, decision, policy, reserve=reserve)

    def settle(self, reservation: BudgetReservation | None, outcome: str) -> None:
        self._firewall._settle(reservation, outcome)

    def execute(
        self,
        call: ToolCall,
        decision: Decision,
        reservation: BudgetReservation | None,
        policy: Policy | None,
        attempt: Attempt | None,
    ) -> ToolResult:
        return self._firewall._execute(call, decision, reservation, policy, attempt)

    def record(self, call: ToolCall, kind: str, data: Mapping[str, Any]) -> None:
        self._firewall._record(call, kind, data)

    def record_now(self, call: ToolCall, kind: str, data: Mapping[str, Any]) -> None:
        """Record outside a governed call (a review): a failed write is an AuditWriteError."""
        try:
            self._firewall._record(call, kind, data)
        except AuditFailed as exc:
            raise AuditWriteError(str(exc)) from exc

    def flush(self) -> None:
        self._firewall._flush()

    def digest_arguments(self, arguments: Mapping[str, Any]) -> str:
        return self._firewall._audit.digest_arguments(arguments)
