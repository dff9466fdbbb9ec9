"""The committed scenario JSON Schema matches the models and validates real scenario files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from harness._scenario_load import (
    SCHEMA_PATH,
    SKIPPED_DIRS,
    render_scenario_schema,
    scenario_json_schema,
    write_scenario_schema,
)

SCENARIO: dict[str, Any] = {
    "id": "lookup",
    "description": "looks up an order",
    "request": "where is ORD-0001?",
    "script": [
        {"calls": [{"tool": "orders.teleport", "hallucinated": True}]},
        {"branch": {"blocked": [{"answer": "no such tool"}]}},
    ],
    "expect": {"must_block": [{"tool": "orders.teleport", "reason": "unknown_tool"}]},
}


def _validator() -> Draft202012Validator:
    schema = scenario_json_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def test_the_committed_schema_matches_the_models() -> None:
    committed = SCHEMA_PATH.read_text(encoding="utf-8") if SCHEMA_PATH.exists() else ""
    assert committed == render_scenario_schema(), (
        f"{SCHEMA_PATH} is out of date with harness/_scenario.py: regenerate it with "
        "`make schemas` and commit the result"
    )


def test_the_schema_says_what_it_is() -> None:
    schema = scenario_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == "Proctor scenario file"
    refs = {option["$ref"] for option in schema["anyOf"]}
    assert refs == {"#/$defs/Scenario", "#/$defs/ScenarioFile"}


def test_one_scenario_and_the_list_form_both_validate() -> None:
    validator = _validator()
    assert list(validator.iter_errors(SCENARIO)) == []
    assert list(validator.iter_errors({"scenarios": [SCENARIO, SCENARIO]})) == []


@pytest.mark.parametrize(
    "broken",
    [
        {**SCENARIO, "scirpt": []},
        {key: value for key, value in SCENARIO.items() if key != "expect"},
        {**SCENARIO, "script": [{"calls": [{"args": {}}]}]},
        {**SCENARIO, "reviews": [{"action": "aprove"}]},
        {"scenarios": []},
        {"scenarios": [SCENARIO], "extra": 1},
    ],
)
def test_common_mistakes_fail_the_schema(broken: dict[str, Any]) -> None:
    assert list(_validator().iter_errors(broken)), broken


def test_the_shipped_scenario_files_validate_against_the_schema() -> None:
    validator = _validator()
    root = SCHEMA_PATH.parent
    files = sorted(
        p for p in root.rglob("*.yaml") if not SKIPPED_DIRS & set(p.relative_to(root).parts)
    )
    assert files, f"no scenario files under {root}"
    for path in files:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        errors = [e.message for e in validator.iter_errors(data)]
        assert errors == [], f"{path}: {errors}"


def test_write_scenario_schema_writes_the_rendered_text(tmp_path: Path) -> None:
    target = write_scenario_schema(tmp_path / "nested" / "scenario.schema.json")
    assert target.read_text(encoding="utf-8") == render_scenario_schema()
    assert json.loads(render_scenario_schema()) == scenario_json_schema()
