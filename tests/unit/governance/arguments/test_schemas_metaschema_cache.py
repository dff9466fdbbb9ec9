"""A tool schema is checked against the metaschema once per process, and the verdict is exact."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from governance import SchemaRefused, local_validator

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
}


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    seen: list[object] = []
    original = Draft202012Validator.check_schema

    def counted(schema: object, *args: Any, **kwargs: Any) -> None:
        seen.append(schema)
        original(schema, *args, **kwargs)

    monkeypatch.setattr(Draft202012Validator, "check_schema", counted)
    return seen


def test_the_same_schema_is_checked_against_the_metaschema_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = _counting(monkeypatch)
    schema = {**SCHEMA, "title": "checked-once"}
    for _ in range(3):
        validator = local_validator(dict(schema))
        assert not validator.is_valid({})
        assert validator.is_valid({"path": "notes.txt"})
    assert len(seen) == 1


def test_an_invalid_schema_is_refused_every_time_it_comes_back() -> None:
    bad = {**SCHEMA, "required": "path"}  # must be a list
    for _ in range(2):
        with pytest.raises(SchemaRefused, match="the schema is invalid"):
            local_validator(bad)
    assert local_validator({**SCHEMA, "required": ["path"]}).is_valid({"path": "x"})


def test_a_schema_that_differs_only_in_a_container_type_is_judged_on_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = _counting(monkeypatch)
    as_list = {**SCHEMA, "title": "container", "enum": [{"a": 1}]}
    as_tuple = {**SCHEMA, "title": "container", "required": ("path",)}
    local_validator(as_list)
    with pytest.raises(SchemaRefused):
        local_validator(as_tuple)  # a tuple is not a JSON array: never mistaken for the list
    with pytest.raises(SchemaRefused):
        local_validator(as_tuple)
    assert len(seen) == 3  # the non-JSON schema is never cached


def test_a_remote_reference_is_refused_even_when_a_twin_passed_before() -> None:
    local_validator({**SCHEMA, "title": "twin"})
    with pytest.raises(SchemaRefused, match="outside itself"):
        local_validator({**SCHEMA, "title": "twin", "$ref": "https://example.com/s.json"})
