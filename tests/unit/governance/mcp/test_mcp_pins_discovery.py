"""What a server's listing becomes: descriptors with pins applied, or skips with a reason."""

from __future__ import annotations

from governance.core._canonical import digest
from governance.mcp._config import McpServerSpec, ToolMapping
from governance.mcp._mapping import McpToolDefinition, describe_tools
from governance.mcp._pins import PinSet, pins_for

READ = ToolMapping("read", "low", reversible=True, external_side_effect=False)
ECHO = McpToolDefinition(name="echo", description="Echo.", input_schema={"type": "object"})
WIPE = McpToolDefinition(name="wipe", annotations={"destructive_hint": True})


def _spec(*, pin_required: bool = False) -> McpServerSpec:
    return McpServerSpec(
        name="demo", transport="stdio", command="x", tools={"echo": READ}, pin_required=pin_required
    )


def test_a_listing_becomes_namespaced_descriptors_with_mapping_and_annotations() -> None:
    echo, wipe = describe_tools(_spec(), [ECHO, WIPE], PinSet())
    assert echo.descriptor is not None and wipe.descriptor is not None
    assert (echo.descriptor.name, echo.descriptor.action_type, echo.mapped) == (
        "mcp.demo.echo",
        "read",
        True,
    )
    assert (wipe.descriptor.action_type, wipe.descriptor.risk, wipe.mapped) == (
        "unknown",
        "high",
        False,
    )
    assert {echo.pin, wipe.pin} == {"unpinned"}
    assert echo.descriptor.quarantine is None and wipe.descriptor.quarantine is None


def test_pins_quarantine_a_changed_tool_and_when_required_an_unpinned_one() -> None:
    pins = PinSet().with_server("demo", pins_for([ECHO]))
    changed_echo = McpToolDefinition(name="echo", description="Echo, and more.")
    echo, wipe = describe_tools(_spec(), [changed_echo, WIPE], pins)
    assert echo.pin == "changed"
    assert echo.descriptor is not None and echo.descriptor.quarantine == "tool_definition_changed"
    assert wipe.descriptor is not None and wipe.descriptor.quarantine is None
    echo, wipe = describe_tools(_spec(pin_required=True), [ECHO, WIPE], pins)
    assert echo.pin == "pinned" and echo.descriptor is not None
    assert echo.descriptor.quarantine is None
    assert wipe.descriptor is not None and wipe.descriptor.quarantine == "tool_not_pinned"


def test_unregistrable_tools_are_skipped_with_a_reason_and_never_break_the_registry() -> None:
    listing = [
        McpToolDefinition(name="a.b"),
        ECHO,
        McpToolDefinition(name="echo", description="a second echo"),
        McpToolDefinition(name="nan", input_schema={"maximum": float("nan")}),
        McpToolDefinition(name="surrogate", description="\ud800"),
    ]
    infos = describe_tools(_spec(), listing, PinSet())
    reasons = [(i.definition.name, i.skipped) for i in infos]
    assert reasons[1] == ("echo", None)
    assert "cannot be namespaced" in (reasons[0][1] or "")
    assert "listed twice" in (reasons[2][1] or "")
    assert "not canonical JSON" in (reasons[3][1] or "")
    assert "not canonical JSON" in (reasons[4][1] or "")
    registered = [i.descriptor for i in infos if i.descriptor is not None]
    assert [(d.name, d.description) for d in registered] == [("mcp.demo.echo", "Echo.")]
    assert digest([d.surface() for d in registered]).startswith("sha256:")  # the registry's digest
