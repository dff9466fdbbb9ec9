"""How one proposed call is decided: its arguments prepared, then the policy asked.

The firewall decides every call with these functions, and read-only tools (`proctor tools
list`) use the same ones, so a listing can never judge a call differently from the firewall
(defaults filled, paths canonicalised, quarantine, unknown tools). Light: no store, no tool.
"""

from __future__ import annotations

from typing import Any

from governance.arguments._snapshot import (
    ArgumentPlan,
    ArgumentRefused,
    PreparedArguments,
    argument_plan,
    snapshot_arguments,
)
from governance.core._contracts import (
    Decision,
    PolicyContext,
    RunUsage,
    ToolCall,
    ToolDescriptor,
)
from governance.policy._compile import Policy
from governance.policy._eval import evaluate, explained_decision


def prepared_arguments(
    descriptor: ToolDescriptor | None, snapshot: dict[str, Any], plan: ArgumentPlan | None = None
) -> PreparedArguments:
    """The one form of a snapshot that is judged and executed (ArgumentRefused); `plan` is
    the descriptor's argument plan when the caller keeps one."""
    if descriptor is None:
        return PreparedArguments(snapshot)
    return (plan or argument_plan(descriptor.input_schema)).prepare(snapshot)


def unsafe_argument(exc: ArgumentRefused, policy_digest: str, registry_digest: str) -> Decision:
    """The firewall's own block for arguments with no safe reading: no rule can allow them."""
    return Decision(
        effect="block",
        rule_ids=(),
        reason=exc.reason,
        policy_digest=policy_digest,
        registry_digest=registry_digest,
        message=f"{exc}; nothing was executed",
    )


def quarantined(call: ToolCall, descriptor: ToolDescriptor, registry_digest: str) -> Decision:
    """e.g. an MCP tool whose definition changed since it was pinned: no rule can allow it."""
    return Decision(
        effect="block",
        rule_ids=(),
        reason=descriptor.quarantine or "quarantined",
        policy_digest="",
        registry_digest=registry_digest,
        message=f"{call.tool} is quarantined ({descriptor.quarantine}); nothing executed",
    )


def policy_decision(
    call: ToolCall,
    descriptor: ToolDescriptor | None,
    policy: Policy,
    *,
    registry_digest: str,
    usage: RunUsage | None,
    evidence: bool,
) -> Decision:
    """`policy`'s decision for a call whose arguments are already prepared; fails closed."""
    context = PolicyContext.for_call(call, descriptor, registry_digest=registry_digest, usage=usage)
    try:
        decision = explained_decision(context, policy) if evidence else evaluate(context, policy)
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


def decide_call(
    call: ToolCall,
    descriptor: ToolDescriptor | None,
    policy: Policy,
    *,
    registry_digest: str,
    usage: RunUsage | None = None,
    evidence: bool = True,
) -> Decision:
    """The decision the firewall makes for `call` (`descriptor`: its registered tool, or None)
    under `policy`, with nothing recorded or executed: the arguments prepared as a real call's
    are, quarantine and unknown tools as the firewall treats them. The schema is not checked
    (a real call failing it is refused before any decision) and budgets are not consulted."""
    try:
        prepared = prepared_arguments(descriptor, snapshot_arguments(call.arguments))
    except ArgumentRefused as exc:
        return unsafe_argument(exc, policy.digest, registry_digest)
    if descriptor is not None and descriptor.quarantine:
        return quarantined(call, descriptor, registry_digest)
    return policy_decision(
        call.with_arguments(prepared.arguments),
        descriptor,
        policy,
        registry_digest=registry_digest,
        usage=usage,
        evidence=evidence,
    )
