"""The schema proof may only ever say "valid" where jsonschema says valid, and it must be
used: a proven call never reaches jsonschema's walk."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from governance import (
    Firewall,
    Principal,
    StaticPolicy,
    ToolCall,
    ToolDescriptor,
    ToolRegistry,
    ToolResult,
    local_validator,
)
from governance.arguments._schema_proof import valid_proof
from governance.policy import load_policy
from governance.stores import MemoryAuditLog
from governance.tools import builtin_registry

FLAT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "count"],
    "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-c]+$"},
        "count": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10},
        "ratio": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 1.5},
        "mode": {"type": ["string", "boolean", "integer"], "enum": ["on", True, 1]},
        "note": {"type": "string", "title": "Note", "x-proctor-kind": "path", "default": "."},
    },
}
OPEN = {**FLAT, "additionalProperties": True}

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=12),
    st.floats(allow_nan=False, allow_infinity=True),
    st.sampled_from([1.0, 0.0, 1.5, 2.0]),
    st.text(alphabet="abcd-é", max_size=7),
    st.sampled_from(["on", "off", "ab", "abc"]),
)
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=2), st.dictionaries(st.text(), SCALARS))
KEYS = st.sampled_from(["name", "count", "ratio", "mode", "note", "other", "Name"])
ARGUMENTS = st.dictionaries(KEYS, VALUES, max_size=6)


def _builtin_schemas() -> list[dict[str, Any]]:
    return [dict(d.input_schema) for d in builtin_registry().descriptors()]


@settings(max_examples=600, deadline=None)
@given(arguments=ARGUMENTS)
def test_a_proven_value_is_always_one_jsonschema_accepts(arguments: dict[str, Any]) -> None:
    for schema in (FLAT, OPEN):
        validator = local_validator(schema)
        proof = valid_proof(validator)
        assert proof is not None
        if proof(arguments):
            assert validator.is_valid(arguments), arguments


@settings(max_examples=300, deadline=None)
@given(arguments=st.dictionaries(st.sampled_from(["path", "order_id", "amount", "reason",
                                                  "priority", "title", "sql", "to", "query"]),
                                 VALUES, max_size=4))  # fmt: skip
def test_the_builtin_schemas_are_proven_only_where_jsonschema_agrees(
    arguments: dict[str, Any],
) -> None:
    for schema in _builtin_schemas():
        validator = local_validator(schema)
        proof = valid_proof(validator)
        assert proof is not None, schema.get("title")
        if proof(arguments):
            assert validator.is_valid(arguments), (schema.get("title"), arguments)


def test_the_common_valid_arguments_are_proven() -> None:
    proof = valid_proof(local_validator(FLAT))
    assert proof is not None
    assert proof({"name": "abc", "count": 9, "ratio": None, "mode": True})
    assert proof({"name": "ab", "count": 1, "ratio": 1.5, "mode": "on", "note": "x"})


@pytest.mark.parametrize(
    "arguments",
    [
        {"name": "abc"},  # a required one missing
        {"name": "abc", "count": 1, "other": 1},  # closed object
        {"name": "abd", "count": 1},  # pattern
        {"name": "a", "count": 1},  # minLength
        {"name": "abcabc", "count": 1},  # maxLength
        {"name": "abc", "count": 10},  # exclusiveMaximum
        {"name": "abc", "count": 0},  # minimum
        {"name": "abc", "count": True},  # a bool is not an integer
        {"name": "abc", "count": 2.0},  # left to jsonschema (it accepts it)
        {"name": "abc", "count": 2, "ratio": 0},  # exclusiveMinimum
        {"name": "abc", "count": 2, "mode": 2},  # enum
        {"name": "abc", "count": 2, "mode": "1"},  # enum: "1" is not 1
        {"name": "abc", "count": 2, "mode": False},  # enum: False is not 0, nor True
    ],
)
def test_a_value_outside_the_schema_is_not_proven(arguments: dict[str, Any]) -> None:
    proof = valid_proof(local_validator(FLAT))
    assert proof is not None
    assert not proof(arguments)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {}}},
        {"type": "object", "properties": {"a": {"type": "string", "format": "email"}}},
        {"type": "object", "properties": {"a": {"type": "object"}}},
        {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}},
        {"type": "object", "properties": {"a": {"enum": ["x"]}}},  # untyped
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 2.0}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "properties": {"a": {"type": "string"}}, "allOf": [{"required": ["a"]}]},
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
        {"properties": {"a": {"type": "string"}}},  # not declared an object
    ],
)
def test_a_schema_outside_the_modelled_words_gets_no_proof(schema: dict[str, Any]) -> None:
    assert valid_proof(local_validator(schema)) is None


POLICY = """
version: 1
rules:
  - {id: allow-lookup, effect: allow, match: {tool: demo.lookup}}
"""


class LookupSource:
    name = "demo"

    def list_tools(self) -> list[ToolDescriptor]:
        schema = {
            "type": "object",
            "additionalProperties": False,
            "required": ["order_id"],
            "properties": {"order_id": {"type": "string", "pattern": "^ORD-[0-9]{4}$"}},
        }
        return [ToolDescriptor("demo.lookup", "look up", schema, "demo", "read", "low",
                               True, False, True)]  # fmt: skip

    def call(self, call: ToolCall) -> ToolResult:
        return ToolResult(call.call_id, call.tool, "executed", output="found")


def test_a_proven_call_never_walks_the_schema_with_jsonschema(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    walks: list[object] = []

    def counted(self: Any, instance: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        walks.append(instance)
        return real(self, instance, *args, **kwargs)

    real = Draft202012Validator.iter_errors
    local_validator(LookupSource().list_tools()[0].input_schema)  # its metaschema check, done
    monkeypatch.setattr(Draft202012Validator, "iter_errors", counted)
    (tmp_path / "policy.yaml").write_text(POLICY)
    policy = load_policy(tmp_path / "policy.yaml")
    with MemoryAuditLog() as audit:
        firewall = Firewall(ToolRegistry([LookupSource()]), StaticPolicy(policy), audit)
        principal = Principal("a", "b", "c")
        good = ToolCall("c1", "demo.lookup", {"order_id": "ORD-0001"}, "r", principal)
        bad = ToolCall("c2", "demo.lookup", {"order_id": "ORD-1"}, "r", principal)
        assert firewall.call(good).outcome == "executed"
        assert walks == []
        refused = firewall.call(bad)
    assert walks == [{"order_id": "ORD-1"}]  # not proven: jsonschema judges and words it
    assert refused.outcome == "failed" and refused.reason == "invalid_arguments"
    assert "does not match" in (refused.error or "")


def test_a_firewall_rebuilt_over_the_same_descriptors_looks_up_no_validator_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import governance.arguments._schema_checks as checks_module

    (tmp_path / "policy.yaml").write_text(POLICY)
    policy = load_policy(tmp_path / "policy.yaml")
    registry = ToolRegistry([LookupSource()])
    principal = Principal("a", "b", "c")
    looked_up: list[object] = []
    real = checks_module.local_validator

    def counted(schema: Any) -> Any:
        looked_up.append(schema)
        return real(schema)

    monkeypatch.setattr(checks_module, "local_validator", counted)
    for n in range(3):  # one firewall per scenario, as a suite builds them
        with MemoryAuditLog() as audit:
            firewall = Firewall(registry, StaticPolicy(policy), audit)
            call = ToolCall(f"c{n}", "demo.lookup", {"order_id": "ORD-0001"}, "r", principal)
            assert firewall.call(call).outcome == "executed"
    assert len(looked_up) == 1  # once in this process, never once per firewall
    # Another descriptor (say, a new MCP listing) is looked up and judged on its own.
    other = ToolRegistry([LookupSource()])
    with MemoryAuditLog() as audit:
        firewall = Firewall(other, StaticPolicy(policy), audit)
        bad = ToolCall("c9", "demo.lookup", {"order_id": "x"}, "r", principal)
        assert firewall.call(bad).reason == "invalid_arguments"
    assert len(looked_up) == 2 and looked_up[-1] == other.get("demo.lookup").input_schema  # type: ignore[union-attr]
