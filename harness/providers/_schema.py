"""What a vendor sees of Proctor's tools: sanitised JSON Schemas and vendor-safe function names.

The sanitised schema only guides the model. The firewall still validates arguments against the
tool's own schema, so cutting a recursive `$ref` down to an open schema (`{}`) loosens
guidance, never enforcement.

Choices (pinned by tests):
- dropped everywhere: `$schema`, `$id`, `$comment`, `examples` (rejected by some vendors, no
  use to the model) and `discriminator` (an OpenAPI keyword whose `mapping` points into `$defs`,
  which no longer exist after inlining);
- dropped at the root only: `title` (pydantic's class name, e.g. `ReadArgs`); nested titles are
  kept, they are harmless and may say something the property name does not;
- kept: `default` (tells the model what omitting an argument means; only OpenAI's opt-in
  `strict` mode rejects it, and Proctor does not send `strict`);
- local `$ref`s (`#/$defs/...`, `#/definitions/...`, any `#/...` pointer) are inlined, with the
  referring schema's sibling keywords winning; a ref back into its own expansion (a cycle) or
  one that does not resolve becomes `{}`;
- `const: v` becomes `enum: [v]`;
- the root always is `{"type": "object", "properties": {...}, ...}`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

__all__ = ["SchemaTooLargeError", "ToolNameCodec", "sanitize_tool_schema"]

_DROP_EVERYWHERE = frozenset({"$schema", "$id", "$comment", "examples", "discriminator"})
_DROP_AT_ROOT = frozenset({"title"})
_DEFS = ("$defs", "definitions")
# Keywords whose value is a map from names (kept verbatim) to subschemas.
_NAMED_SUBSCHEMAS = frozenset({"properties", "patternProperties", "dependentSchemas"})
# Keywords whose value is one subschema.
_ONE_SUBSCHEMA = frozenset(
    {
        "additionalProperties",
        "unevaluatedProperties",
        "propertyNames",
        "items",
        "additionalItems",
        "unevaluatedItems",
        "contains",
        "not",
        "if",
        "then",
        "else",
    }
)
# Keywords whose value is a list of subschemas.
_LIST_OF_SUBSCHEMAS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})

_MAX_NODES = 10_000
_MAX_DEPTH = 100


class SchemaTooLargeError(ValueError):
    """The schema nests too deeply or inlining its `$ref`s would blow it up (a ref bomb)."""


class _Inliner:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self._root = root
        self._nodes = 0

    def schema(self, node: Any, *, depth: int, expanding: tuple[str, ...], root: bool) -> Any:
        if not isinstance(node, Mapping):
            # `true`/`false` schemas and junk pass through as data; the vendor judges junk.
            return _copy_data(node)
        self._nodes += 1
        if self._nodes > _MAX_NODES or depth > _MAX_DEPTH:
            raise SchemaTooLargeError(
                f"tool schema exceeds {_MAX_NODES} nodes or depth {_MAX_DEPTH} once its $refs "
                "are inlined"
            )
        ref = node.get("$ref")
        if isinstance(ref, str):
            siblings = {key: value for key, value in node.items() if key != "$ref"}
            target = self._resolve(ref)
            if target is None or ref in expanding:
                inlined: dict[str, Any] = {}
            else:
                inlined = self.schema(
                    target, depth=depth + 1, expanding=(*expanding, ref), root=root
                )
                if not isinstance(inlined, dict):
                    inlined = {}
            own = self.schema(siblings, depth=depth + 1, expanding=expanding, root=root)
            return {**inlined, **own}

        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROP_EVERYWHERE or key in _DEFS or (root and key in _DROP_AT_ROOT):
                continue
            if key in _NAMED_SUBSCHEMAS and isinstance(value, Mapping):
                out[key] = {
                    name: self.schema(sub, depth=depth + 1, expanding=expanding, root=False)
                    for name, sub in value.items()
                }
            elif key in _ONE_SUBSCHEMA:
                if isinstance(value, list | tuple):  # draft-04 tuple `items`
                    out[key] = [
                        self.schema(sub, depth=depth + 1, expanding=expanding, root=False)
                        for sub in value
                    ]
                else:
                    out[key] = self.schema(value, depth=depth + 1, expanding=expanding, root=False)
            elif key in _LIST_OF_SUBSCHEMAS and isinstance(value, list | tuple):
                out[key] = [
                    self.schema(sub, depth=depth + 1, expanding=expanding, root=False)
                    for sub in value
                ]
            elif key == "const":
                out["enum"] = [_copy_data(value)]
            elif key == "enum" and "const" in node:
                continue  # const is the stricter of the two
            else:
                out[key] = _copy_data(value)
        return out

    def _resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            return None  # remote refs are never fetched
        node: Any = self._root
        pointer = unquote(ref[1:])
        if pointer == "":
            return node
        if not pointer.startswith("/"):
            return None
        for raw in pointer[1:].split("/"):
            token = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and token in node:
                node = node[token]
            elif isinstance(node, list | tuple) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return None
        return node


def _copy_data(value: Any) -> Any:
    """A deep copy of a JSON value into plain dicts and lists; data is never interpreted."""
    if isinstance(value, Mapping):
        return {key: _copy_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_copy_data(item) for item in value]
    return value


def sanitize_tool_schema(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """A vendor-safe copy of a tool's input schema; never mutates `schema`.

    Raises SchemaTooLargeError for a schema nested beyond reason or a `$ref` bomb, and
    ValueError when the root declares a type other than `object` (a vendor would refuse it and
    wrapping it would change the arguments' shape).
    """
    if schema is None:
        return {"type": "object", "properties": {}}
    out = _Inliner(schema).schema(schema, depth=0, expanding=(), root=True)
    if not isinstance(out, dict):
        out = {}
    declared = out.get("type")
    if isinstance(declared, list) and "object" in declared:
        declared = "object"
    if declared not in (None, "object"):
        raise ValueError(
            f"a tool's input schema must have type 'object' at its root, not {declared!r}"
        )
    out["type"] = "object"
    if not isinstance(out.get("properties"), dict):
        out["properties"] = {}
    # Root first, as a reader expects it; key order does not change the JSON's meaning.
    return {"type": out.pop("type"), "properties": out.pop("properties"), **out}


_VENDOR_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MAX_NAME = 64
_HASH_LEN = 8


def _plain(name: str) -> str:
    return name.replace(".", "__")


def _hashed(name: str) -> str:
    suffix = hashlib.sha256(name.encode("utf-8")).hexdigest()[:_HASH_LEN]
    stem = re.sub(r"[^A-Za-z0-9_-]", "_", _plain(name))[: _MAX_NAME - _HASH_LEN - 1]
    return f"{stem}_{suffix}"


class ToolNameCodec:
    """Maps Proctor's namespaced names (`fs.read`) to vendor-safe ones (`fs__read`) and back.

    Deterministic in the set of names alone: `.` becomes `__`; a name that still breaks
    `^[a-zA-Z0-9_-]{1,64}$`, or whose plain form two names share, gets a stable hash suffix.
    Decoding an unknown vendor name returns it unchanged (the loop reports it as hallucinated).
    """

    def __init__(self, names: Iterable[str]) -> None:
        unique = sorted(set(names))
        claims: dict[str, list[str]] = {}
        for name in unique:
            claims.setdefault(_plain(name), []).append(name)
        encode: dict[str, str] = {}
        for name in unique:
            plain = _plain(name)
            ok = _VENDOR_NAME.match(plain) is not None and len(claims[plain]) == 1
            encode[name] = plain if ok else _hashed(name)
        decode: dict[str, str] = {}
        for name, encoded in encode.items():
            if encoded in decode:
                raise ValueError(
                    f"tool names {decode[encoded]!r} and {name!r} both encode to {encoded!r}; "
                    "rename one of them"
                )
            decode[encoded] = name
        self._encode = encode
        self._decode = decode

    @classmethod
    def for_request(
        cls, tools: Sequence[Mapping[str, Any]], messages: Sequence[Mapping[str, Any]]
    ) -> ToolNameCodec:
        """A codec covering every tool offered and every tool name already in the history."""
        names: list[str] = []
        for tool in tools:
            function = tool.get("function")
            if isinstance(function, Mapping) and isinstance(function.get("name"), str):
                names.append(function["name"])
        for message in messages:
            calls = message.get("tool_calls")
            for call in calls if isinstance(calls, list | tuple) else ():
                function = call.get("function") if isinstance(call, Mapping) else None
                if isinstance(function, Mapping) and isinstance(function.get("name"), str):
                    names.append(function["name"])
        return cls(names)

    def encode(self, name: str) -> str:
        """The vendor name; a name the codec was not built with still gets a vendor-safe form."""
        encoded = self._encode.get(name)
        if encoded is not None:
            return encoded
        plain = _plain(name)
        return plain if _VENDOR_NAME.match(plain) else _hashed(name)

    def decode(self, vendor_name: str) -> str:
        return self._decode.get(vendor_name, vendor_name)

    @property
    def mapping(self) -> Mapping[str, str]:
        """Proctor name -> vendor name, for logs and tests."""
        return dict(self._encode)
