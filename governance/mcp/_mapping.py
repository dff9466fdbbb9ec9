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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from governance.arguments._schemas import SchemaRefused, check_local_schema
from governance.core._canonical import canonical_json, digest
from governance.core._contracts import RISK_ORDER, ActionType, Risk, ToolDescriptor
from governance.mcp._config import TOOL_NAME, McpServerSpec, ToolMapping
from governance.mcp._text import safe_description


class Pins(Protocol):
    """The recorded digest of a tool, if any (governance.mcp._pins.PinSet has it)."""

    def get(self, server: str, tool: str) -> str | None: ...

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


@dataclass(frozen=True, slots=True)
class McpToolInfo:
    """One tool a server listed, with what Proctor made of it (for `proctor mcp list`)."""

    server: str
    definition: McpToolDefinition
    descriptor: ToolDescriptor | None  # None when the tool was skipped
    mapped: bool
    pin: PinState
    skipped: str | None = None


def encodable(definition: McpToolDefinition) -> bool:
    """Whether the definition has a digest (canonical JSON can encode it)."""
    try:
        canonical_json(definition.surface())
    except ValueError:  # NaN, Infinity, a lone surrogate: no digest, so no registry entry
        return False
    return True


def describe_tools(
    spec: McpServerSpec, definitions: Sequence[McpToolDefinition], pins: Pins
) -> list[McpToolInfo]:
    """What Proctor makes of one server's listing: mapping, annotations, pins, or a skip."""
    infos: list[McpToolInfo] = []
    seen: set[str] = set()
    for definition in definitions:
        name = definition.name
        mapping = spec.tools.get(name)
        skipped = None
        if not valid_tool_name(name):
            skipped = "the name is not letters, digits, '_' or '-' (it cannot be namespaced)"
        elif name in seen:
            skipped = "listed twice by the server; the first listing is used"
        elif not encodable(definition):
            skipped = "its definition is not canonical JSON (NaN, Infinity or a lone surrogate)"
        seen.add(name)
        if skipped is not None:
            infos.append(
                McpToolInfo(spec.name, definition, None, mapping is not None, "unpinned", skipped)
            )
            continue
        pin, quarantine = pin_verdict(
            definition, pins.get(spec.name, name), required=spec.pin_required
        )
        if quarantine is None:
            try:  # a schema that needs a remote (or dangling) `$ref` never gets validated
                check_local_schema(definition.input_schema)
            except SchemaRefused as exc:
                quarantine = exc.reason
        descriptor = build_descriptor(spec.name, definition, mapping, quarantine=quarantine)
        infos.append(McpToolInfo(spec.name, definition, descriptor, mapping is not None, pin))
    return infos
