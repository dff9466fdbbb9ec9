"""Validators are reused per schema text; what a caller does to its schema afterwards, or a
schema that fails its check, never reaches a cached validator."""

from __future__ import annotations

from typing import Any

import pytest

from governance import SchemaRefused, local_validator
from governance.arguments._schemas import first_problem


def _schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"path": {"type": "string", "maxLength": 5}},
        "required": ["path"],
        "additionalProperties": False,
    }


def test_the_same_schema_text_gets_the_same_validator() -> None:
    assert local_validator(_schema()) is local_validator(_schema())


def test_editing_a_schema_after_its_validator_was_built_changes_neither() -> None:
    schema = _schema()
    validator = local_validator(schema)
    schema["properties"]["path"]["maxLength"] = 500
    schema["additionalProperties"] = True
    assert first_problem(validator, {"path": "toolong"}) is not None
    assert first_problem(validator, {"path": "ok", "x": 1}) is not None
    relaxed = local_validator(schema)
    assert relaxed is not validator
    assert first_problem(relaxed, {"path": "toolong", "x": 1}) is None


def test_a_refused_schema_is_refused_every_time() -> None:
    remote = {"$ref": "https://example.com/schema.json"}
    for _ in range(2):
        with pytest.raises(SchemaRefused):
            local_validator(remote)
