"""A tool's argument plan (defaults, declared paths) is read from its schema once and prepares
every call exactly as walking the schema per call does."""

from __future__ import annotations

import random
from typing import Any

import pytest

from governance.arguments._snapshot import (
    ArgumentRefused,
    PreparedArguments,
    argument_plan,
    canonicalise_paths,
    with_schema_defaults,
)

NAMES = ["path", "paths", "mode", "n", "tags", "dir"]
PATHS = ["docs/a.txt", "docs/./b//c", "../etc/passwd", "/abs", "a\\b", "ok", "x/../y"]


def _schema(rng: random.Random) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for name in rng.sample(NAMES, rng.randrange(len(NAMES) + 1)):
        spec: dict[str, Any] = {}
        kind = rng.randrange(4)
        if kind == 1:
            spec["x-proctor-kind"] = "path"
        elif kind == 2:
            spec["items"] = {"type": "string", "x-proctor-kind": "path"}
        elif kind == 3:
            spec = "not a mapping"  # type: ignore[assignment]
        if isinstance(spec, dict) and rng.random() < 0.5:
            spec["default"] = rng.choice([".", "docs/./d", 0, None, [], {"k": [1]}, ["docs//e"]])
        properties[name] = spec
    return {"type": "object", "properties": properties}


def _arguments(rng: random.Random) -> dict[str, Any]:
    values: list[Any] = [*PATHS, 3, None, [rng.choice(PATHS), rng.choice(PATHS)], [1, "a"]]
    return {name: rng.choice(values) for name in rng.sample(NAMES, rng.randrange(4))}


def _walked(schema: dict[str, Any], arguments: dict[str, Any]) -> PreparedArguments | str:
    try:
        filled, defaults = with_schema_defaults(schema, arguments)
        canonical, changed = canonicalise_paths(schema, filled)
    except ArgumentRefused as exc:
        return f"{exc.reason}: {exc}"
    return PreparedArguments(canonical, defaults, changed)


def _planned(schema: dict[str, Any], arguments: dict[str, Any]) -> PreparedArguments | str:
    plan = argument_plan(schema)
    try:
        return plan.prepare(arguments)
    except ArgumentRefused as exc:
        return f"{exc.reason}: {exc}"


@pytest.mark.parametrize("seed", range(4))
def test_the_plan_prepares_every_call_exactly_as_walking_the_schema_does(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        schema = _schema(rng)
        arguments = _arguments(rng)
        before = repr(arguments)
        assert _planned(schema, arguments) == _walked(schema, arguments)
        assert repr(arguments) == before  # the caller's snapshot is never changed


def test_a_filled_default_is_a_copy_so_changing_it_never_changes_the_schema() -> None:
    schema = {"properties": {"tags": {"type": "array", "default": [["a"]]}}}
    plan = argument_plan(schema)
    first = plan.prepare({})
    first.arguments["tags"][0].append("changed")
    assert schema["properties"]["tags"]["default"] == [["a"]]
    assert plan.prepare({}).arguments == {"tags": [["a"]]}
    assert first.defaults_applied == ("tags",)
