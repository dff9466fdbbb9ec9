import dataclasses

import pytest

from governance import PolicyContext, Principal, RunUsage, ToolCall, ToolDescriptor
from governance.core._contracts import effective_impact


def _descriptor(**overrides: object) -> ToolDescriptor:
    fields: dict[str, object] = {
        "name": "fs.read",
        "description": "read a file",
        "input_schema": {"type": "object"},
        "source": "local",
        "action_type": "read",
        "risk": "low",
        "reversible": True,
        "external_side_effect": False,
        "idempotent": True,
    }
    fields.update(overrides)
    return ToolDescriptor(**fields)  # type: ignore[arg-type]


def test_policy_context_field_list_is_pinned_and_has_no_room_for_model_text() -> None:
    names = [f.name for f in dataclasses.fields(PolicyContext)]
    assert names == [
        "tool",
        "known",
        "source",
        "action_type",
        "risk",
        "impact",
        "reversible",
        "external_side_effect",
        "idempotent",
        "arguments",
        "principal",
        "run_id",
        "tokens_used",
        "budget_usage",
        "tainted",
        "registry_digest",
    ]
    forbidden = {"reasoning", "thought", "intent", "message", "prompt", "text", "user_intent"}
    assert not forbidden & set(names)


def test_policy_context_is_frozen() -> None:
    call = ToolCall("c1", "fs.read", {"path": "a"}, "run-1", Principal("ann", "bot", "ops"))
    context = PolicyContext.for_call(call, _descriptor(), registry_digest="sha256:x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.tool = "fs.delete"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("action_type", "reversible", "external", "expected"),
    [
        ("read", True, False, "read"),
        ("write", True, False, "write"),
        ("write", False, False, "destructive"),
        ("read", True, True, "destructive"),
        ("external", True, False, "destructive"),
        ("destructive", True, False, "destructive"),
        ("unknown", True, False, "unknown"),
        ("unknown", False, False, "destructive"),
    ],
)
def test_irreversible_or_external_calls_are_destructive_whatever_was_declared(
    action_type: str, reversible: bool, external: bool, expected: str
) -> None:
    impact = effective_impact(
        action_type,  # type: ignore[arg-type]
        reversible=reversible,
        external_side_effect=external,
    )
    assert impact == expected


def test_unknown_tool_context_carries_the_most_dangerous_facts() -> None:
    call = ToolCall("c1", "ghost.tool", {}, "run-1", Principal("ann", "bot", "ops"))
    context = PolicyContext.for_call(
        call, None, registry_digest="sha256:x", usage=RunUsage(tokens_used=7, tainted=True)
    )
    assert context.known is False
    assert context.action_type == "unknown"
    assert context.risk == "critical"
    assert context.reversible is False
    assert context.external_side_effect is True
    assert context.tokens_used == 7
    assert context.tainted is True
