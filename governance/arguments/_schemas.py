"""Tool input schemas, validated locally: a `$ref` never reaches the network.

A tool's schema comes from whoever serves the tool (an MCP server, possibly hostile). jsonschema
will fetch a remote `$ref` while validating unless told otherwise, so the server could make
Proctor GET a URL of its choosing. Here every reference must resolve inside the schema itself;
a schema that needs anything else is refused up front (its tool is quarantined), and the
validator's registry refuses any retrieval as a second line.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource

from governance.core._errors import InputRefused

MAX_SCHEMA_DEPTH = 64
MAX_SCHEMA_NODES = 20_000


class SchemaRefused(InputRefused):
    """A schema Proctor will not validate with."""


def _no_retrieval(uri: str) -> Resource[Any]:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


_LOCAL_ONLY: Registry[Any] = Registry(retrieve=_no_retrieval)  # type: ignore[call-arg]

# The metaschema verdict per schema (its repr), or None when it passed; bounded, never evicted.
_METASCHEMA_CHECKED: dict[str, str | None] = {}
_METASCHEMA_CACHE_SIZE = 1024


def _walk(node: object, depth: int, budget: list[int], refs: list[str], ids: set[str]) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise SchemaRefused("schema_invalid", f"the schema has more than {MAX_SCHEMA_NODES} nodes")
    if depth > MAX_SCHEMA_DEPTH:
        raise SchemaRefused(
            "schema_invalid", f"the schema nests deeper than {MAX_SCHEMA_DEPTH} levels"
        )
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                refs.append(value)
            elif key == "$id" and isinstance(value, str) and depth > 0:
                ids.add(value.rstrip("#"))
            _walk(value, depth + 1, budget, refs, ids)
    elif isinstance(node, list):
        for item in node:
            _walk(item, depth + 1, budget, refs, ids)


def _pointer_resolves(root: object, fragment: str) -> bool:
    if fragment == "":
        return True
    if not fragment.startswith("/"):
        return True  # a plain-name `$anchor`; resolved (or refused) by the local registry
    node = root
    for raw in fragment[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False
    return True


def check_local_schema(schema: Mapping[str, Any]) -> None:
    """SchemaRefused unless `schema` is a valid JSON Schema whose references are all local."""
    refs: list[str] = []
    ids: set[str] = set()
    _walk(schema, 0, [MAX_SCHEMA_NODES], refs, ids)
    for ref in refs:
        base, _, fragment = ref.partition("#")
        if base and base not in ids:
            raise SchemaRefused(
                "schema_remote_ref",
                f"the schema refers to {ref!r}, outside itself; Proctor resolves references "
                "locally only, so it will not fetch it",
            )
        if not base and not _pointer_resolves(schema, fragment):
            raise SchemaRefused(
                "schema_unresolvable", f"the schema's reference {ref!r} points at nothing"
            )
    # Checking against the metaschema costs milliseconds, and the same few schemas come back on
    # every call and every scenario: plain JSON schemas are checked once per process.
    key = _schema_key(schema)
    if key is not None and key in _METASCHEMA_CHECKED:
        problem = _METASCHEMA_CHECKED[key]
    else:
        problem = _metaschema_problem(schema)
        if key is not None and len(_METASCHEMA_CHECKED) < _METASCHEMA_CACHE_SIZE:
            _METASCHEMA_CHECKED[key] = problem
    if problem is not None:
        raise SchemaRefused("schema_invalid", f"the schema is invalid ({problem})")


def _schema_key(schema: Mapping[str, Any]) -> str | None:
    """The canonical text both caches key a schema by, or None when it is not plain JSON
    (a tuple, a non-string key, NaN: such a schema is checked every time, never cached)."""
    try:
        if not _plain(schema):
            return None
        return json.dumps(schema, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None


def _plain(node: object) -> bool:
    """Only dicts with string keys, lists and JSON scalars: its JSON text identifies it exactly."""
    if isinstance(node, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in node.items())
    if isinstance(node, list):
        return all(_plain(item) for item in node)
    return node is None or type(node) in (str, int, float, bool)


def _metaschema_problem(schema: Mapping[str, Any]) -> str | None:
    try:
        Draft202012Validator.check_schema(dict(schema))
    except SchemaError as exc:
        return exc.message
    return None


# Checking a schema costs milliseconds and a suite builds the same few validators thousands of
# times (one gateway per scenario): validators are kept per schema text. A validator holds its
# own parsed copy of that text, so a caller mutating its schema afterwards cannot reach it.
_VALIDATORS: dict[str, Draft202012Validator] = {}
_VALIDATORS_MAX = 512
_VALIDATORS_LOCK = threading.Lock()


def local_validator(schema: Mapping[str, Any]) -> Draft202012Validator:
    """A validator for `schema` that can never retrieve a reference; SchemaRefused if unusable."""
    text = _schema_key(schema)
    if text is not None:
        with _VALIDATORS_LOCK:
            found = _VALIDATORS.get(text)
        if found is not None:
            return found
    check_local_schema(schema)
    if text is None:
        return Draft202012Validator(dict(schema), registry=_LOCAL_ONLY)
    validator = Draft202012Validator(json.loads(text), registry=_LOCAL_ONLY)
    with _VALIDATORS_LOCK:
        if len(_VALIDATORS) < _VALIDATORS_MAX:
            _VALIDATORS[text] = validator
    return validator


def first_problem(validator: Draft202012Validator, instance: Mapping[str, Any]) -> str | None:
    """The first validation error as `where: message`, or None. Errors inside the validator
    (a reference that fails to resolve at run time) raise SchemaRefused."""
    try:
        errors = sorted(validator.iter_errors(dict(instance)), key=lambda e: list(e.path))
    except Exception as exc:  # referencing errors, RecursionError, pathological schemas
        raise SchemaRefused(
            "schema_invalid", f"the schema could not be applied ({type(exc).__name__})"
        ) from exc
    if not errors:
        return None
    first = errors[0]
    where = ".".join(str(p) for p in first.path) or "(arguments)"
    return f"{where}: {first.message}"
