"""Arguments are read once: snapshot, defaults, canonical paths. Used by the firewall and
`policy explain`, so what the policy judges is exactly what the tool receives.

1. `snapshot_arguments` copies the caller's mapping into plain JSON values, reading every
   container once: a `Mapping` that answers differently on a second read cannot show the
   policy one value and the tool another.
2. Omitted arguments with a schema default are filled in (`fs.list {}` means `path: "."`).
3. Arguments the tool's schema declares as paths (`"x-proctor-kind": "path"`) are replaced by
   their canonical form (`governance.arguments._paths`), or the call is refused.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from governance.arguments._paths import PathRefused, canonical_path
from governance.core._errors import InputRefused

# The JSON Schema keyword a tool uses to say "this string names a file in the workspace".
KIND_KEYWORD = "x-proctor-kind"
PATH_KIND = "path"

MAX_DEPTH = 64
MAX_NODES = 100_000


class ArgumentRefused(InputRefused):
    """Arguments with no single safe reading."""


@dataclass(frozen=True, slots=True)
class PreparedArguments:
    """The one form of a call's arguments that is judged, recorded and executed."""

    arguments: dict[str, Any]
    defaults_applied: tuple[str, ...] = ()
    canonicalised: tuple[str, ...] = ()


def snapshot_arguments(arguments: object) -> dict[str, Any]:
    """A deep copy of `arguments` as plain JSON values (dict, list, str, int, finite float,
    bool, None), reading each container exactly once; ArgumentRefused for anything else."""
    if not isinstance(arguments, Mapping):
        raise ArgumentRefused(
            "invalid_arguments", f"arguments must be an object, not {type(arguments).__name__}"
        )
    budget = [MAX_NODES]
    result = _plain(arguments, "(arguments)", 0, budget)
    assert isinstance(result, dict)
    return result


def _plain(value: object, where: str, depth: int, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise ArgumentRefused("invalid_arguments", f"arguments have more than {MAX_NODES} values")
    if depth > MAX_DEPTH:
        raise ArgumentRefused(
            "invalid_arguments", f"{where}: arguments nest deeper than {MAX_DEPTH} levels"
        )
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)  # a subclass could override __eq__ or __str__
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ArgumentRefused("invalid_arguments", f"{where}: {value} is not a JSON number")
        return float(value)
    if isinstance(value, str):
        text = str(value)
        if _has_surrogate(text):
            raise ArgumentRefused("invalid_arguments", f"{where}: a string holds a lone surrogate")
        return text
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in list(value.items()):  # one read of a possibly hostile mapping
            if not isinstance(key, str):
                raise ArgumentRefused(
                    "invalid_arguments", f"{where}: object keys must be strings, not {key!r}"
                )
            name = str(key)
            if _has_surrogate(name):
                raise ArgumentRefused("invalid_arguments", f"{where}: a key holds a lone surrogate")
            out[name] = _plain(item, f"{where}.{name}" if depth else name, depth + 1, budget)
        return out
    if isinstance(value, list | tuple):
        return [
            _plain(item, f"{where}[{i}]", depth + 1, budget) for i, item in enumerate(list(value))
        ]
    raise ArgumentRefused(
        "invalid_arguments", f"{where}: {type(value).__name__} is not a JSON value"
    )


def copy_snapshot(value: Any) -> Any:
    """A deep copy of a snapshot (plain JSON values only, as `snapshot_arguments` returns):
    `copy.deepcopy` for this one shape, without its generic per-object bookkeeping."""
    kind = type(value)
    if kind is dict:
        return {key: copy_snapshot(item) for key, item in value.items()}
    if kind is list:
        return [copy_snapshot(item) for item in value]
    if value is None or kind is str or kind is int or kind is float or kind is bool:
        return value  # immutable
    return copy.deepcopy(value)  # not a snapshot after all: the generic copy


def _has_surrogate(text: str) -> bool:
    """Whether `text` holds a surrogate code point (U+D800-U+DFFF): exactly what strict UTF-8
    refuses to encode, so the codec checks it in C rather than a loop per character."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def with_schema_defaults(
    schema: Mapping[str, Any], arguments: Mapping[str, Any]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """`arguments` with top-level schema defaults filled in, and the names that were filled."""
    filled = dict(arguments)
    applied: list[str] = []
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name in sorted(properties):
            spec = properties[name]
            if name not in filled and isinstance(spec, Mapping) and "default" in spec:
                filled[name] = copy.deepcopy(spec["default"])
                applied.append(name)
    return filled, tuple(applied)


def path_arguments(schema: Mapping[str, Any]) -> tuple[str, ...]:
    """Top-level arguments the schema declares as workspace paths (a string or a list of them)."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return ()
    names = []
    for name, spec in properties.items():
        if not isinstance(spec, Mapping):
            continue
        items = spec.get("items")
        if spec.get(KIND_KEYWORD) == PATH_KIND or (
            isinstance(items, Mapping) and items.get(KIND_KEYWORD) == PATH_KIND
        ):
            names.append(str(name))
    return tuple(sorted(names))


def canonicalise_paths(
    schema: Mapping[str, Any], arguments: Mapping[str, Any]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """`arguments` with every declared path in canonical form, and the names that changed.

    ArgumentRefused (reason `invalid_argument:<name>`) when a declared path has no safe reading.
    A value of the wrong type is left alone: the schema check reports it.
    """
    return _canonical_paths(path_arguments(schema), arguments)


def _canonical_paths(
    paths: tuple[str, ...], arguments: Mapping[str, Any]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    out = dict(arguments)
    changed: list[str] = []
    for name in paths:
        if name not in out:
            continue
        value = out[name]
        try:
            if isinstance(value, str):
                canonical: Any = canonical_path(value)
            elif isinstance(value, list) and all(isinstance(v, str) for v in value):
                canonical = [canonical_path(v) for v in value]
            else:
                continue
        except PathRefused as exc:
            raise ArgumentRefused(f"invalid_argument:{name}", f"{name}: {exc}") from exc
        if canonical != value:
            out[name] = canonical
            changed.append(name)
    return out, tuple(changed)


def prepare_arguments(schema: Mapping[str, Any] | None, arguments: object) -> PreparedArguments:
    """Snapshot, fill defaults and canonicalise paths: the form that is judged and executed.

    `schema` is None for an unregistered tool (only the snapshot applies).
    """
    return prepare_snapshot(schema, snapshot_arguments(arguments))


def prepare_snapshot(
    schema: Mapping[str, Any] | None, snapshot: dict[str, Any]
) -> PreparedArguments:
    """`prepare_arguments` for arguments that are already a snapshot (plain JSON values)."""
    if schema is None:
        return PreparedArguments(snapshot)
    return argument_plan(schema).prepare(snapshot)


@dataclass(frozen=True, slots=True)
class ArgumentPlan:
    """What a schema asks of every call's arguments, read from the schema once: the top-level
    defaults (in name order) and the declared paths. `prepare` does what `with_schema_defaults`
    then `canonicalise_paths` do, without walking and sorting the schema again per call."""

    defaults: tuple[tuple[str, Any], ...]
    paths: tuple[str, ...]

    def prepare(self, snapshot: Mapping[str, Any]) -> PreparedArguments:
        filled = dict(snapshot)
        applied: list[str] = []
        for name, default in self.defaults:
            if name not in filled:
                filled[name] = copy_snapshot(default)  # never the schema's own object
                applied.append(name)
        if not self.paths:
            return PreparedArguments(filled, tuple(applied))
        canonical, changed = _canonical_paths(self.paths, filled)
        return PreparedArguments(canonical, tuple(applied), changed)


def argument_plan(schema: Mapping[str, Any]) -> ArgumentPlan:
    """The plan of `schema` (see ArgumentPlan); a caller that sees one schema again keeps it."""
    defaults: list[tuple[str, Any]] = []
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name in sorted(properties):
            spec = properties[name]
            if isinstance(spec, Mapping) and "default" in spec:
                defaults.append((name, spec["default"]))
    return ArgumentPlan(tuple(defaults), path_arguments(schema))
