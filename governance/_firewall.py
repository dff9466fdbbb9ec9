"""The firewall: the one place a tool call is decided, recorded and - maybe - executed.

It wraps the registry's sources and keeps the `ToolSource` interface, so an agent loop is the
same code with or without governance. Nothing else in Proctor calls `ToolSource.call`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from governance._arguments import with_schema_defaults
from governance._canonical import digest
from governance._contracts import (
    Decision,
    PolicyContext,
    RunUsage,
    ToolCall,
    ToolDescriptor,
    ToolResult,
)
from governance._errors import AuditWriteError, PolicyError
from governance._policy_eval import Policy, evaluate
from governance._registry import ToolRegistry

DEFAULT_MAX_RESULT_CHARS = 20_000

# The lifecycle, in order. `approval.required` only for held calls; a block stops after
# `policy.decided`; `call.rejected` is for calls that never reach a decision (bad arguments).
LIFECYCLE = (
    "tool.requested",
    "call.rejected",
    "policy.decided",
    "approval.required",
    "execution.started",
    "execution.completed",
    "execution.failed",
)


class PolicySource(Protocol):
    """Hands out the policy in force right now (a file that may have been edited)."""

    def current(self) -> Policy: ...


class AuditSink(Protocol):
    """Where the write-ahead record goes. `append` raises AuditWriteError when it cannot write."""

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
    ) -> None:
        if max_result_chars < 1:
            raise ValueError("max_result_chars must be positive")
        self._registry = registry
        self._policy = policy
        self._audit = audit
        self._max_result_chars = max_result_chars
        self._observers = list(observers)
        self._validators: dict[str, Draft202012Validator] = {}

    @property
    def registry(self) -> ToolRegistry:
        return self._registry

    def add_observer(self, observer: Callable[[LifecycleEvent], None]) -> None:
        self._observers.append(observer)

    def list_tools(self) -> list[ToolDescriptor]:
        return self._registry.descriptors()

    def decide(self, call: ToolCall, usage: RunUsage | None = None) -> Decision:
        """The policy decision for `call`, without recording or executing anything."""
        descriptor = self._registry.get(call.tool)
        registry_digest = self._registry.digest
        try:
            policy = self._policy.current()
        except PolicyError as exc:
            return Decision(
                effect="block",
                rule_ids=(),
                reason="policy_unavailable",
                policy_digest="",
                registry_digest=registry_digest,
                message=f"the policy cannot be loaded, so every call is blocked: {exc}",
            )
        context = PolicyContext.for_call(
            call, descriptor, registry_digest=registry_digest, usage=usage
        )
        try:
            decision = evaluate(context, policy)
        except Exception as exc:  # fail closed: a broken evaluator never allows
            return Decision(
                effect="block",
                rule_ids=(),
                reason="evaluator_error",
                policy_digest=policy.digest,
                registry_digest=registry_digest,
                message=f"policy evaluation failed ({type(exc).__name__}), so the call is blocked",
            )
        if decision.effect == "allow" and descriptor is None:
            # Defence in depth: an unregistered name can never be allowed, whatever the policy.
            return Decision(
                effect="block",
                rule_ids=decision.rule_ids,
                reason="unknown_tool",
                policy_digest=decision.policy_digest,
                registry_digest=registry_digest,
                message=f"{call.tool!r} is not a registered tool",
            )
        return decision

    def call(self, call: ToolCall, *, usage: RunUsage | None = None) -> ToolResult:
        """Govern one call end to end. Never raises for a refused call: refusals are results."""
        try:
            return self._govern(call, usage)
        except _AuditFailed as exc:
            return ToolResult(
                call_id=call.call_id,
                tool=call.tool,
                outcome="failed",
                error=f"not executed: the audit log could not record the call ({exc})",
                reason="audit_unavailable",
            )

    def _govern(self, call: ToolCall, usage: RunUsage | None) -> ToolResult:
        descriptor = self._registry.get(call.tool)
        defaults_applied: tuple[str, ...] = ()
        if descriptor is not None:
            arguments, defaults_applied = with_schema_defaults(
                descriptor.input_schema, call.arguments
            )
            if defaults_applied:
                call = replace(call, arguments=arguments)
        self._record(
            call,
            "tool.requested",
            {
                "arguments": dict(call.arguments),
                "arguments_digest": self._audit.digest_arguments(call.arguments),
                "principal": {
                    "actor": call.principal.actor,
                    "agent": call.principal.agent,
                    "team": call.principal.team,
                },
                "tokens_used": (usage or RunUsage()).tokens_used,
                "defaults_applied": list(defaults_applied),
            },
        )
        if descriptor is not None:
            problem = self._schema_problem(descriptor, call.arguments)
            if problem is not None:
                self._record(
                    call, "call.rejected", {"reason": "invalid_arguments", "error": problem}
                )
                return ToolResult(
                    call_id=call.call_id,
                    tool=call.tool,
                    outcome="failed",
                    error=f"invalid arguments for {call.tool}: {problem}",
                    reason="invalid_arguments",
                )

        decision = self.decide(call, usage)
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
        if decision.effect == "require_approval":
            self._record(call, "approval.required", {"rule_ids": list(decision.rule_ids)})
            return ToolResult(
                call_id=call.call_id,
                tool=call.tool,
                outcome="held",
                error="held for human approval; nothing was executed",
                reason=decision.reason,
                decision=decision,
            )
        return self._execute(call, decision)

    def _execute(self, call: ToolCall, decision: Decision) -> ToolResult:
        source = self._registry.source_for(call.tool)
        if source is None:  # unreachable while decide() holds; kept so it can never execute
            return ToolResult(
                call_id=call.call_id, tool=call.tool, outcome="blocked", reason="unknown_tool"
            )
        # Write-ahead: if this record cannot be written, _record raises and nothing executes.
        self._record(call, "execution.started", {"source": source.name})
        try:
            result = source.call(call)
        except Exception as exc:  # a source that raises is a failed call, never a dead run
            result = ToolResult(
                call_id=call.call_id,
                tool=call.tool,
                outcome="failed",
                error=f"{type(exc).__name__}: {exc}",
                reason="tool_error",
            )
        result = self._cap(result, decision)
        if result.outcome == "executed":
            self._record(
                call,
                "execution.completed",
                {
                    "output_digest": digest(result.output),
                    "output_chars": len(result.output),
                    "truncated": result.truncated,
                },
            )
        else:
            self._record(call, "execution.failed", {"reason": result.reason, "error": result.error})
        return result

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
        validator = self._validators.get(descriptor.name)
        if validator is None:
            try:
                validator = Draft202012Validator(dict(descriptor.input_schema))
            except SchemaError as exc:
                return f"the tool's own input schema is invalid ({exc.message})"
            self._validators[descriptor.name] = validator
        errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.path))
        if not errors:
            return None
        first = errors[0]
        where = ".".join(str(p) for p in first.path) or "(arguments)"
        return f"{where}: {first.message}"

    def _record(self, call: ToolCall, kind: str, data: Mapping[str, Any]) -> None:
        payload = {"call_id": call.call_id, "tool": call.tool, **data}
        try:
            self._audit.append(call.run_id, kind, payload)
        except AuditWriteError as exc:
            raise _AuditFailed(str(exc)) from exc
        event = LifecycleEvent(
            kind=kind, run_id=call.run_id, call_id=call.call_id, tool=call.tool, data=data
        )
        for observer in self._observers:
            observer(event)


def _decision_record(decision: Decision) -> dict[str, Any]:
    return {
        "effect": decision.effect,
        "rule_ids": list(decision.rule_ids),
        "reason": decision.reason,
        "policy_digest": decision.policy_digest,
        "registry_digest": decision.registry_digest,
    }
