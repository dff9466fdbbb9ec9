"""sanitize_tool_schema on pydantic-generated schemas and the edge cases vendors trip on."""

from __future__ import annotations

import copy
import json
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from harness.providers._schema import SchemaTooLargeError, sanitize_tool_schema


class Address(BaseModel):
    street: str = Field(description="street and number", examples=["1 Main St"])
    city: str


class Customer(BaseModel):
    """A customer to create."""

    name: str = Field(title="Full name", description="as printed on the invoice")
    mode: Literal["strict"] = "strict"
    home: Address
    work: Address | None = None
    tags: list[str] = Field(default_factory=list, examples=[["vip"]])


class Tree(BaseModel):
    label: str
    children: list[Tree] = []


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


class Adopt(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]


def _walk(node: object) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found.extend(_walk(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_walk(value))
    return found


def _keys(node: object) -> set[str]:
    return {key for schema in _walk(node) for key in schema}


def test_pydantic_refs_are_inlined_and_defs_are_gone() -> None:
    schema = Customer.model_json_schema()
    assert "$defs" in schema  # the premise: pydantic emits refs
    out = sanitize_tool_schema(schema)
    assert "$ref" not in json.dumps(out)
    assert "$defs" not in out
    home = out["properties"]["home"]
    assert home["type"] == "object"
    assert home["properties"]["street"]["description"] == "street and number"
    work_options = out["properties"]["work"]["anyOf"]
    assert {"type": "null"} in work_options
    assert any(option.get("properties", {}).get("city") for option in work_options)


def test_root_is_an_object_without_title_or_schema_keywords() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "x",
        **(Customer.model_json_schema()),
    }
    out = sanitize_tool_schema(schema)
    assert list(out)[:2] == ["type", "properties"]
    assert out["type"] == "object"
    assert "title" not in out
    assert not {"$schema", "$id", "examples"} & _keys(out)


def test_nested_titles_and_defaults_are_kept() -> None:
    out = sanitize_tool_schema(Customer.model_json_schema())
    assert out["properties"]["name"]["title"] == "Full name"
    assert out["properties"]["mode"]["default"] == "strict"


def test_const_becomes_a_one_item_enum() -> None:
    out = sanitize_tool_schema(Customer.model_json_schema())
    mode = out["properties"]["mode"]
    assert mode["enum"] == ["strict"]
    assert "const" not in mode


def test_const_wins_over_a_looser_enum() -> None:
    out = sanitize_tool_schema(
        {"type": "object", "properties": {"x": {"enum": ["a", "b"], "const": "a"}}}
    )
    assert out["properties"]["x"] == {"enum": ["a"]}


def test_recursive_model_is_cut_to_an_open_schema_at_the_cycle() -> None:
    out = sanitize_tool_schema(Tree.model_json_schema())
    assert out["type"] == "object"
    assert "$ref" not in json.dumps(out)
    children = out["properties"]["children"]
    assert children["type"] == "array"
    assert children["items"] == {}


def test_mutually_recursive_refs_terminate() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}},
        "$defs": {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
            "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}},
        },
    }
    out = sanitize_tool_schema(schema)
    assert out["properties"]["a"]["properties"]["b"]["properties"]["a"] == {}


def test_discriminated_union_loses_its_dangling_mapping() -> None:
    schema = Adopt.model_json_schema()
    assert "discriminator" in json.dumps(schema)  # the premise
    out = sanitize_tool_schema(schema)
    assert "discriminator" not in _keys(out)
    assert "#/$defs" not in json.dumps(out)
    kinds = [option["properties"]["kind"]["enum"] for option in out["properties"]["pet"]["oneOf"]]
    assert kinds == [["cat"], ["dog"]]


def test_ref_siblings_win_over_the_referenced_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"home": {"$ref": "#/$defs/Addr", "description": "where they live"}},
        "$defs": {"Addr": {"type": "object", "description": "an address", "title": "Addr"}},
    }
    out = sanitize_tool_schema(schema)
    assert out["properties"]["home"] == {
        "type": "object",
        "description": "where they live",
        "title": "Addr",
    }


def test_unresolvable_and_remote_refs_become_open_schemas() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/Missing"},
            "b": {"$ref": "https://example.com/schema.json"},
        },
    }
    out = sanitize_tool_schema(schema)
    assert out["properties"] == {"a": {}, "b": {}}


def test_json_pointer_escapes_resolve() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/a~1b~0c"}},
        "$defs": {"a/b~c": {"type": "integer"}},
    }
    assert sanitize_tool_schema(schema)["properties"]["a"] == {"type": "integer"}


def test_property_names_that_look_like_keywords_are_kept() -> None:
    schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "examples": {"type": "array"},
            "$id": {"type": "string"},
        },
        "required": ["title"],
    }
    out = sanitize_tool_schema(schema)
    assert set(out["properties"]) == {"title", "examples", "$id"}
    assert out["required"] == ["title"]


def test_data_values_are_never_interpreted_as_schemas() -> None:
    default = {"title": "kept", "$ref": "#/$defs/X", "const": 1}
    schema = {"type": "object", "properties": {"o": {"type": "object", "default": default}}}
    out = sanitize_tool_schema(schema)
    assert out["properties"]["o"]["default"] == default


def test_input_is_never_mutated() -> None:
    schema = Customer.model_json_schema()
    before = copy.deepcopy(schema)
    out = sanitize_tool_schema(schema)
    assert schema == before
    out["properties"]["home"]["properties"]["city"]["type"] = "changed"
    assert schema == before


def test_missing_root_type_and_properties_are_added() -> None:
    assert sanitize_tool_schema({}) == {"type": "object", "properties": {}}
    assert sanitize_tool_schema(None) == {"type": "object", "properties": {}}
    out = sanitize_tool_schema({"type": ["object", "null"], "required": []})
    assert out == {"type": "object", "properties": {}, "required": []}


def test_non_object_root_is_refused() -> None:
    with pytest.raises(ValueError, match="type 'object'"):
        sanitize_tool_schema({"type": "string"})


def test_a_ref_bomb_is_refused_instead_of_expanded() -> None:
    defs = {
        f"L{i}": {
            "type": "array",
            "items": [{"$ref": f"#/$defs/L{i + 1}"}, {"$ref": f"#/$defs/L{i + 1}"}],
        }
        for i in range(30)
    }
    defs["L30"] = {"type": "string"}
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/L0"}}, "$defs": defs}
    with pytest.raises(SchemaTooLargeError):
        sanitize_tool_schema(schema)


def test_absurdly_deep_nesting_is_refused_not_a_recursion_error() -> None:
    node: dict[str, object] = {"type": "string"}
    for _ in range(5000):
        node = {"type": "array", "items": node}
    with pytest.raises(SchemaTooLargeError):
        sanitize_tool_schema({"type": "object", "properties": {"deep": node}})
