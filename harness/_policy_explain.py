"""How a policy decides one sample call, rule by rule: `proctor policy explain` and the
console's Policies page share it, so both show the same decision for the same facts.

Nothing here executes a tool: the call is only evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from governance import (
    PolicyContext,
    Principal,
    RunUsage,
    ToolCall,
    ToolDescriptor,
)
from governance.arguments import ArgumentRefused, prepare_arguments
from governance.policy import Explanation, Policy, explain


@dataclass(frozen=True, slots=True)
class Explained:
    """The policy's decision on the call, with every rule's outcome."""

    context: PolicyContext
    result: Explanation

    def as_json(self) -> dict[str, Any]:
        decision = self.result.decision
        return {
            "tool": self.context.tool,
            "known": self.context.known,
            "effect": decision.effect,
            "reason": decision.reason,
            "rule_ids": list(decision.rule_ids),
            "matched_rule_ids": list(self.result.matched_rule_ids),
            "message": decision.message,
            "policy_digest": decision.policy_digest,
            "registry_digest": decision.registry_digest,
            "rules": [
                {
                    "id": o.rule_id,
                    "effect": o.effect,
                    "status": o.status,
                    "failed_arg": o.failed_arg,
                    "error": o.error,
                }
                for o in self.result.outcomes
            ],
        }


@dataclass(frozen=True, slots=True)
class RefusedBeforeRules:
    """The firewall refuses these arguments before any rule is evaluated."""

    tool: str
    effect: str
    reason: str
    message: str

    def as_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "effect": self.effect, "reason": self.reason,
                "message": self.message}  # fmt: skip


def explain_call(
    policy: Policy,
    tool: str,
    arguments: Mapping[str, Any],
    *,
    descriptor: ToolDescriptor | None,
    registry_digest: str,
    principal: Principal,
    usage: RunUsage,
) -> Explained | RefusedBeforeRules:
    """The decision `policy` gives `tool(arguments)` proposed by `principal`, after the same
    argument preparation the firewall applies (it judges what would execute)."""
    try:
        prepared = prepare_arguments(
            descriptor.input_schema if descriptor else None, dict(arguments)
        ).arguments
    except ArgumentRefused as exc:
        # An unsafe path is the firewall's own block; arguments that are not JSON are rejected.
        effect = "block" if exc.reason.startswith("invalid_argument:") else "rejected"
        message = f"{exc}; the firewall refuses the call before any rule is evaluated"
        return RefusedBeforeRules(tool, effect, exc.reason, message)
    call = ToolCall(
        call_id="c1", tool=tool, arguments=prepared, run_id="explain", principal=principal
    )
    context = PolicyContext.for_call(call, descriptor, registry_digest=registry_digest, usage=usage)
    return Explained(context, explain(context, policy))
