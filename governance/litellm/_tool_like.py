"""Finding anything that looks like a tool call in a response Proctor has no reader for.

The readers in `_response_sites` know the shapes LiteLLM 1.110 hands the post-call hooks (a
chat completion, a Responses API response, an Anthropic message, as objects or as parsed JSON
from a pass-through route). What they leave must not carry a tool call a client could run:
this walk looks for one anywhere (a key such as `tool_calls`, `function_call`, `functionCall`,
`toolUse`, or an item whose `type` names a call), skipping what a reader already judged and
the request's own tool definitions echoed back (`tools`, `tool_choice`)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

CALL_KEYS: Final = frozenset(
    {
        "tool_calls",
        "function_call",
        "functionCall",
        "toolUse",
        "tool_call",
        "toolCall",
        "function_calls",
        "functionCalls",
        "tool_use",
        "toolUses",
    }
)
# The request's tool definitions and choice, which Responses API objects echo back.
ECHO_KEYS: Final = frozenset({"tools", "tool_choice", "parallel_tool_calls", "tool_config"})
CALL_TYPE: Final = re.compile(r"(?i)(call|tool_use|tool_call|approval_request)$")
_MAX_DEPTH: Final = 48
# The same, in raw bytes that may be cut mid-JSON (a frame of a stream).
_RAW_CALL: Final = re.compile(
    r'"(?:tool_calls|function_call|functionCall|toolUse|tool_call|toolCall)"\s*:\s*[\[{]'
    r'|"type"\s*:\s*"[A-Za-z0-9_.]*(?:call|tool_use|tool_call|approval_request)"'
)


def fields(obj: Any) -> list[tuple[str, Any]]:
    """The named fields of a mapping, a pydantic model (its extras too) or a plain object."""
    if isinstance(obj, Mapping):
        return [(str(key), value) for key, value in obj.items()]
    model_fields = getattr(type(obj), "model_fields", None)
    if isinstance(model_fields, Mapping):
        names = list(model_fields) + list(getattr(obj, "model_extra", None) or {})
        return [(name, getattr(obj, name, None)) for name in names]
    attributes = getattr(obj, "__dict__", None)
    if isinstance(attributes, dict):
        return [(k, v) for k, v in attributes.items() if not k.startswith("_")]
    return []


def get(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def put(obj: Any, key: str, value: Any) -> None:
    if isinstance(obj, dict):
        obj[key] = value
    else:
        setattr(obj, key, value)


def is_call_type(value: Any) -> bool:
    return isinstance(value, str) and bool(CALL_TYPE.search(value))


def first_tool_like(obj: Any, vetted: frozenset[int] = frozenset(), path: str = "$") -> str | None:
    """Where in `obj` something tool-call-like sits (a JSON path), or None. Objects whose id is
    in `vetted` were judged already. Too deep to read counts as found: fail closed."""
    seen: set[int] = set()

    def walk(node: Any, where: str, depth: int) -> str | None:
        if id(node) in vetted or node is None or isinstance(node, (bool, int, float)):
            return None
        if depth > _MAX_DEPTH:
            return where
        if isinstance(node, (bytes, bytearray)):
            text = bytes(node).decode("utf-8", errors="replace")
            if _RAW_CALL.search(text):
                return where
            return walk(_decoded(text), where, depth + 1)
        if isinstance(node, str):
            return None
        if id(node) in seen:
            return None
        seen.add(id(node))
        if isinstance(node, (list, tuple)):
            for index, item in enumerate(node):
                found = walk(item, f"{where}[{index}]", depth + 1)
                if found:
                    return found
            return None
        items = fields(node)
        for key, value in items:
            if key == "type" and is_call_type(value):
                return f"{where}.type={value}"
        for key, value in items:
            if key in ECHO_KEYS:
                continue
            if key in CALL_KEYS and value and id(value) not in vetted:
                if not (isinstance(value, list) and all(id(v) in vetted for v in value)):
                    return f"{where}.{key}"
            found = walk(value, f"{where}.{key}", depth + 1)
            if found:
                return found
        return None

    return walk(obj, path, 0)


def _decoded(text: str) -> list[Any]:
    """The JSON values in a raw body or server-sent-event frames (unparseable lines: none)."""
    values: list[Any] = []
    candidates = [text] + [
        line.partition(":")[2].strip() for line in text.splitlines() if line.startswith("data:")
    ]
    for candidate in candidates:
        try:
            values.append(json.loads(candidate))
        except ValueError:
            continue
    return values
