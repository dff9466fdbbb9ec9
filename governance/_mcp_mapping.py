"""From an MCP tool definition to a governed `ToolDescriptor`: pure, no I/O.

The operator's mapping (the config file) decides a tool's facts. A server's annotations are
claims by the server about itself, so they may only make a tool look MORE dangerous:
  * `destructiveHint: true`  -> risk at least `high`, `reversible: false`, and a `read`/`write`
    action type becomes `destructive` (a rule that allows reads must not catch it);
  * `openWorldHint: true`    -> `external_side_effect: true`;
  * `readOnlyHint`           -> never lowers anything;
  * `idempotentHint`         -> never sets `idempotent` (only the mapping can: it allows a retry).
Only an explicit `true` counts; an absent hint leaves the mapping as it is. An unmapped tool
gets the worst facts: `action_type: unknown`, risk `high`, irreversible, external, not
idempotent, so policy can only hold or block it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from governance._canonical import digest
from governance._contracts import RISK_ORDER, ActionType, Risk, ToolDescriptor
from governance._mcp_config import TOOL_NAME, ToolMapping
from governance._mcp_text import safe_description

HINTS = ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint")
UNMAPPED = ToolMapping(
    action_type="unknown",
    risk="high",
    reversible=False,
    external_side_effect=True,
    idempotent=False,
)
PinState = Literal["pinned", "changed", "unpinned"]


@dataclass(frozen=True, slots=True)
class McpToolDefinition:
    """One tool exactly as a server listed it (the raw text; nothing is trusted yet)."""

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    output_schema: Mapping[str, Any] | None = None
    title: str | None = None
    annotations: Mapping[str, bool | None] = field(default_factory=dict)

    def surface(self) -> dict[str, Any]:
        """What a pin covers: name, title, description, both schemas and the four hints."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "input_schema": dict(self.input_schema),
            "output_schema": None if self.output_schema is None else dict(self.output_schema),
            "annotations": {hint: self.annotations.get(hint) for hint in HINTS},
        }

    @property
    def digest(self) -> str:
        return digest(self.surface())


def valid_tool_name(name: str) -> bool:
    """MCP names Proctor can register: no dots (a dot would shift the policy namespace)."""
    return TOOL_NAME.fullmatch(name) is not None


def _raise_risk(risk: Risk, floor: Risk) -> Risk:
    return floor if RISK_ORDER[floor] > RISK_ORDER[risk] else risk


def governed_facts(
    mapping: ToolMapping | None, annotations: Mapping[str, bool | None]
) -> ToolMapping:
    """The mapping (or the unmapped default) with the annotation rules applied: only raises."""
    facts = mapping or UNMAPPED
    action_type: ActionType = facts.action_type
    risk = facts.risk
    reversible = facts.reversible
    external = facts.external_side_effect
    if annotations.get("destructive_hint") is True:
        risk = _raise_risk(risk, "high")
        reversible = False
        if action_type in ("read", "write"):
            action_type = "destructive"
    if annotations.get("open_world_hint") is True:
        external = True
    return ToolMapping(
        action_type=action_type,
        risk=risk,
        reversible=reversible,
        external_side_effect=external,
        idempotent=facts.idempotent,
    )


def build_descriptor(
    server: str,
    tool: McpToolDefinition,
    mapping: ToolMapping | None,
    *,
    quarantine: str | None = None,
) -> ToolDescriptor:
    """The descriptor `mcp.<server>.<tool>` registers under; the input schema passes through."""
    facts = governed_facts(mapping, tool.annotations)
    return ToolDescriptor(
        name=f"mcp.{server}.{tool.name}",
        description=safe_description(tool.description),
        input_schema=dict(tool.input_schema),
        source=f"mcp.{server}",
        action_type=facts.action_type,
        risk=facts.risk,
        reversible=facts.reversible,
        external_side_effect=facts.external_side_effect,
        idempotent=facts.idempotent,
        quarantine=quarantine,
    )


def pin_verdict(
    tool: McpToolDefinition, pinned: str | None, *, required: bool
) -> tuple[PinState, str | None]:
    """(pin state, quarantine reason or None). A recorded pin is always enforced."""
    if pinned is None:
        return "unpinned", ("tool_not_pinned" if required else None)
    if pinned != tool.digest:
        return "changed", "tool_definition_changed"
    return "pinned", None
