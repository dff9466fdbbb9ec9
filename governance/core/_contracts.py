"""The shapes every part of Proctor agrees on: descriptors, calls, results, decisions, context.

Frozen dataclasses: parsed once at the boundary, trusted inside the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, runtime_checkable

ActionType = Literal["read", "write", "destructive", "external", "unknown"]
Risk = Literal["low", "medium", "high", "critical"]
Impact = Literal["read", "write", "destructive", "unknown"]
Effect = Literal["allow", "require_approval", "block"]
Outcome = Literal["executed", "failed", "blocked", "held"]

ACTION_TYPES: tuple[ActionType, ...] = ("read", "write", "destructive", "external", "unknown")
RISKS: tuple[Risk, ...] = ("low", "medium", "high", "critical")
IMPACTS: tuple[Impact, ...] = ("read", "write", "destructive", "unknown")
EFFECTS: tuple[Effect, ...] = ("allow", "require_approval", "block")
RISK_ORDER: Mapping[Risk, int] = {"low": 0, "medium": 1, "high": 2, "critical": 3}


def effective_impact(
    action_type: ActionType, *, reversible: bool, external_side_effect: bool
) -> Impact:
    """Anything irreversible or externally visible is destructive, whatever it was declared."""
    if action_type in ("destructive", "external") or not reversible or external_side_effect:
        return "destructive"
    if action_type == "unknown":
        return "unknown"
    return "write" if action_type == "write" else "read"


@dataclass(frozen=True, slots=True)
class ToolDescriptor:
    """What a tool is and what it can do to the world. `name` is namespaced (`fs.read`)."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    source: str
    action_type: ActionType
    risk: Risk
    reversible: bool
    external_side_effect: bool
    idempotent: bool
    quarantine: str | None = None  # a reason code: the tool is listed but must not run
    # Its output carries text a third party wrote (an email, a web page, a message): the model
    # reading it may read instructions, so a run where it executed is tainted whatever the
    # content screener found.
    untrusted_output: bool = False

    @property
    def namespace(self) -> str:
        return self.name.rsplit(".", 1)[0] if "." in self.name else ""

    @property
    def impact(self) -> Impact:
        return effective_impact(
            self.action_type,
            reversible=self.reversible,
            external_side_effect=self.external_side_effect,
        )

    def surface(self) -> dict[str, Any]:
        """Every field as plain JSON: what the registry digest is computed over."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": dict(self.input_schema),
            "source": self.source,
            "action_type": self.action_type,
            "risk": self.risk,
            "reversible": self.reversible,
            "external_side_effect": self.external_side_effect,
            "idempotent": self.idempotent,
            "quarantine": self.quarantine,
            # Listed only when set: every registry digest recorded before the field existed
            # (baselines, stored traces) still names the same tools.
            **({"untrusted_output": True} if self.untrusted_output else {}),
        }


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is acting: the human or service (`actor`), the agent, and the team owning it."""

    actor: str
    agent: str
    team: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One proposed call. `call_id` is deterministic within a run (`c1`, `c2`, ...)."""

    call_id: str
    tool: str
    arguments: Mapping[str, Any]
    run_id: str
    principal: Principal

    def with_arguments(self, arguments: Mapping[str, Any]) -> ToolCall:
        """This call with other arguments (`dataclasses.replace`, without its overhead)."""
        return ToolCall(self.call_id, self.tool, arguments, self.run_id, self.principal)


@dataclass(frozen=True, slots=True)
class PolicyEvidence:
    """Which rules applied to one call, and which rules and conditions decided it.

    A rule is *decisive* when disabling it alone would change the decision's effect or reason.
    A condition is *decisive* when flipping its result alone would change whether its rule
    applies: the rule's selectors hold and every other condition of the rule holds. Conditions
    are named `<rule-id>.when[<i>]:held` or `:failed` (the result it had). Sorted, so traces
    stay byte-identical. Coverage (`proctor run`) and mutation testing are built on it.
    """

    matched: tuple[str, ...] = ()
    decisive: tuple[str, ...] = ()
    conditions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Decision:
    """The policy's verdict on one call, with the evidence that produced it."""

    effect: Effect
    rule_ids: tuple[str, ...]
    reason: str
    policy_digest: str
    registry_digest: str
    message: str = ""
    # Not part of the verdict: two decisions with the same verdict are equal.
    evidence: PolicyEvidence = field(default_factory=PolicyEvidence, compare=False)

    @property
    def allowed(self) -> bool:
        return self.effect == "allow"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What came back for one call. A blocked or held call is a result, never an exception."""

    call_id: str
    tool: str
    outcome: Outcome
    output: str = ""
    error: str | None = None
    reason: str | None = None
    truncated: bool = False
    decision: Decision | None = None
    approval_id: str | None = None
    # Set when the call ran with other arguments than proposed (a reviewer's approved edit).
    arguments: Mapping[str, Any] | None = None
    # Injection-shaped patterns the firewall found in what the tool wrote (output or error
    # text): the model will read untrusted instructions, so the run becomes tainted.
    findings: tuple[str, ...] = ()
    # A failure that trusted code (the firewall, a source's own pre-dispatch gate, a tool's
    # pre-check) states happened before anything was done. Only this releases a failed call's
    # budget slot: False (the default) means the effect is unknown, whatever `reason` says.
    before_effect: bool = False

    @property
    def ok(self) -> bool:
        return self.outcome == "executed"


@dataclass(frozen=True, slots=True)
class RunUsage:
    """Run-level facts the firewall needs for a decision (fed by the harness)."""

    tokens_used: int = 0
    tainted: bool = False


_NO_USAGE: Final = RunUsage()  # frozen: one shared instance stands for "no usage reported"


@dataclass(frozen=True, slots=True)
class PolicyContext:
    """Only structured facts about a proposed call.

    There is deliberately no field for model-generated text (reasoning, intent, the
    user's message): prompt-injected prose has nowhere to go. A test pins this field list.
    """

    tool: str
    known: bool
    source: str
    action_type: ActionType
    risk: Risk
    impact: Impact
    reversible: bool
    external_side_effect: bool
    idempotent: bool
    arguments: Mapping[str, Any]
    principal: Principal
    run_id: str
    tokens_used: int
    budget_usage: Mapping[str, int] = field(default_factory=dict)
    tainted: bool = False
    registry_digest: str = ""

    @classmethod
    def for_call(
        cls,
        call: ToolCall,
        descriptor: ToolDescriptor | None,
        *,
        registry_digest: str,
        usage: RunUsage | None = None,
        budget_usage: Mapping[str, int] | None = None,
    ) -> PolicyContext:
        usage = usage or _NO_USAGE
        if descriptor is None:
            # An unregistered name: the most dangerous facts, so no rule can mistake it for safe.
            return cls(
                tool=call.tool,
                known=False,
                source="",
                action_type="unknown",
                risk="critical",
                impact="unknown",
                reversible=False,
                external_side_effect=True,
                idempotent=False,
                arguments=call.arguments,
                principal=call.principal,
                run_id=call.run_id,
                tokens_used=usage.tokens_used,
                budget_usage=dict(budget_usage or {}),
                tainted=usage.tainted,
                registry_digest=registry_digest,
            )
        return cls(
            tool=call.tool,
            known=True,
            source=descriptor.source,
            action_type=descriptor.action_type,
            risk=descriptor.risk,
            impact=descriptor.impact,
            reversible=descriptor.reversible,
            external_side_effect=descriptor.external_side_effect,
            idempotent=descriptor.idempotent,
            arguments=call.arguments,
            principal=call.principal,
            run_id=call.run_id,
            tokens_used=usage.tokens_used,
            budget_usage=dict(budget_usage or {}),
            tainted=usage.tainted,
            registry_digest=registry_digest,
        )


@runtime_checkable
class ToolSource(Protocol):
    """Where tools live (in-process, MCP stdio, MCP HTTP). Only the firewall calls `call`."""

    name: str

    def list_tools(self) -> list[ToolDescriptor]: ...

    def call(self, call: ToolCall) -> ToolResult: ...
