"""A quick proof that arguments satisfy a tool schema, for the common flat schemas.

jsonschema walks a schema in pure Python (~70 us for a one-field object), once per governed
call. Most tool schemas are one object of scalar properties, so here such a schema is compiled
into plain checks that can only say "valid" when jsonschema would: every keyword is read
exactly as jsonschema's own keyword function reads it, and any keyword outside the small set
below (a `$ref`, `format`, a nested object, an unknown word) means no proof is built at all.
A "not proven" answer (a failing check, a float where an integer is declared) is never a
verdict: jsonschema decides, and words the problem. So the proof can only skip work.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from jsonschema import Draft202012Validator

Proof = Callable[[Mapping[str, Any]], bool]
_Leaf = Callable[[object], bool]

# Words that never make a value invalid in Draft 2020-12 (annotations), besides `x-*` keys.
_ANNOTATIONS: Final = frozenset({"title", "description", "default", "examples", "$comment"})
_LEAF_KEYWORDS: Final = frozenset(
    {
        "type", "enum", "minLength", "maxLength", "pattern",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    }
)  # fmt: skip
_ROOT_KEYWORDS: Final = frozenset({"type", "properties", "required", "additionalProperties"})
# A JSON type name -> the exact Python types proven to be of it (jsonschema accepts more: a
# float such as 1.0 as an integer; those are left to it).
_TYPES: Final[Mapping[str, tuple[type, ...]]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}

# Proofs per validator; the entry keeps the validator alive, so its id is never reused here.
# (Kept here, not on the validator: jsonschema validators are attrs classes with slots.)
_PROOFS: dict[int, tuple[Draft202012Validator, Proof | None]] = {}
_PROOFS_MAX = 512


def valid_proof(validator: Draft202012Validator) -> Proof | None:
    """A function that returns True only for arguments `validator` accepts, or None when
    its schema is outside what the proof handles."""
    entry = _PROOFS.get(id(validator))
    if entry is not None and entry[0] is validator:
        return entry[1]
    try:
        proof: Proof | None = _compile_root(validator.schema)
    except Exception:  # _Unsupported, or a schema odd enough to upset the compiler itself
        proof = None
    if len(_PROOFS) >= _PROOFS_MAX:
        _PROOFS.clear()
    _PROOFS[id(validator)] = (validator, proof)
    return proof


class _Unsupported(Exception):
    """The schema uses something the proof does not model: jsonschema alone decides."""


def _words(schema: object, allowed: frozenset[str]) -> Mapping[str, Any]:
    if type(schema) is not dict:
        raise _Unsupported
    for key in schema:
        if type(key) is not str:
            raise _Unsupported
        if key not in allowed and key not in _ANNOTATIONS and not key.startswith("x-"):
            raise _Unsupported
    return schema


def _compile_root(schema: object) -> Proof:
    words = _words(schema, _ROOT_KEYWORDS)
    if words.get("type") != "object":
        raise _Unsupported
    properties = words.get("properties", {})
    if type(properties) is not dict or any(type(name) is not str for name in properties):
        raise _Unsupported
    leaves = {name: _compile_leaf(spec) for name, spec in properties.items()}
    required = words.get("required", [])
    if type(required) is not list or any(type(name) is not str for name in required):
        raise _Unsupported
    needed = tuple(required)
    extra = words.get("additionalProperties", True)
    if type(extra) is not bool:
        raise _Unsupported
    closed = not extra

    def proof(arguments: Mapping[str, Any]) -> bool:
        if type(arguments) is not dict:
            return False
        for name in needed:
            if name not in arguments:
                return False
        for name, value in arguments.items():
            leaf = leaves.get(name)
            if leaf is None:
                if closed:
                    return False
            elif not leaf(value):
                return False
        return True

    return proof


def _number(limit: object) -> float | int:
    if type(limit) not in (int, float) or not math.isfinite(limit):  # type: ignore[arg-type]
        raise _Unsupported
    return limit  # type: ignore[return-value]


def _count(limit: object) -> int:
    if type(limit) is not int or limit < 0:
        raise _Unsupported
    return limit


def _compile_leaf(spec: object) -> _Leaf:
    words = _words(spec, _LEAF_KEYWORDS)
    if "type" not in words:
        raise _Unsupported  # an untyped value could be a container: not modelled
    names = words["type"] if type(words["type"]) is list else [words["type"]]
    if not names or any(name not in _TYPES for name in names):
        raise _Unsupported
    types = tuple(t for name in names for t in _TYPES[name])
    checks: list[_Leaf] = []
    if "enum" in words:
        choices = words["enum"]
        if type(choices) is not list or any(
            type(c) not in (str, int, bool, type(None)) for c in choices
        ):
            raise _Unsupported
        # Same type and equal: jsonschema's `equal` agrees (it keeps True apart from 1).
        allowed = frozenset((type(c), c) for c in choices)
        checks.append(lambda v: (type(v), v) in allowed)
    if "minLength" in words:
        low = _count(words["minLength"])
        checks.append(lambda v: type(v) is not str or len(v) >= low)
    if "maxLength" in words:
        high = _count(words["maxLength"])
        checks.append(lambda v: type(v) is not str or len(v) <= high)
    if "pattern" in words:
        if type(words["pattern"]) is not str:
            raise _Unsupported
        try:
            pattern = re.compile(words["pattern"])
        except re.error as exc:
            raise _Unsupported from exc
        checks.append(lambda v: type(v) is not str or pattern.search(v) is not None)
    for word, holds in (
        ("minimum", lambda v, n: v >= n),
        ("maximum", lambda v, n: v <= n),
        ("exclusiveMinimum", lambda v, n: v > n),
        ("exclusiveMaximum", lambda v, n: v < n),
    ):
        if word in words:
            checks.append(_bound(holds, _number(words[word])))

    def leaf(value: object) -> bool:
        if type(value) not in types:
            return False
        return all(check(value) for check in checks)

    return leaf


def _bound(holds: Callable[[Any, Any], bool], limit: float | int) -> _Leaf:
    return lambda v: type(v) not in (int, float) or holds(v, limit)
