"""Tool output read as JSON, once, without ever raising: what the screens and the claims check
read when a result is a JSON document (its strings decoded: `\\n`, `\\u0049` undone).

`json_document` answers None for text that is not JSON, and for a document nested too deep to
parse (json raises RecursionError there, which is not a ValueError: a tool's output must never
crash a check). Walks are iterative for the same reason.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from typing import Any

_NOT_JSON = object()


@functools.lru_cache(maxsize=64)  # one output is read by several checks of the same call
def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON


def json_document(text: str) -> tuple[bool, Any]:
    """(True, value) when `text` is one JSON document, else (False, None). Treat the value as
    read-only: it is shared by every caller that reads the same text."""
    if not text or text.lstrip()[:1] not in ('{', '[', '"'):
        return False, None  # only containers and strings carry text worth decoding
    value = _parsed(text)
    return (False, None) if value is _NOT_JSON else (True, value)


def json_pairs(value: Any) -> Iterator[tuple[str | None, Any]]:
    """(key, scalar) for every scalar in `value`, depth first in document order; the key is the
    object member's name (None inside a list or at the top)."""
    stack: list[tuple[str | None, Any]] = [(None, value)]
    while stack:
        key, item = stack.pop()
        if isinstance(item, Mapping):
            stack.extend(reversed([(str(k), v) for k, v in item.items()]))
        elif isinstance(item, list):
            stack.extend(reversed([(None, v) for v in item]))
        else:
            yield key, item


def json_scalars(value: Any) -> list[str]:
    """Every member name and every non-null scalar of `value`, as text, in document order."""
    found: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            for key, member in reversed(list(item.items())):
                stack.append(member)
                stack.append(str(key))  # a name is a scalar: it comes out just before its value
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif item is not None:
            found.append(str(item))
    return found

