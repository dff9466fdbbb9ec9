"""JSON in pieces, byte-identical to `json.dumps(value, sort_keys=True, indent=2,
ensure_ascii=False)`: a report of any size is written without being held whole.

A `Lazy` stands for a list whose items are produced one at a time (each scenario's entry, read
from its trace file when its turn comes).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

_INDENT = "  "


class Lazy:
    """A JSON list produced item by item when written; each item is plain JSON values (no
    `Lazy` inside), so it is encoded by one `json.dumps` call."""

    def __init__(self, items: Callable[[], Iterable[Any]]) -> None:
        self._items = items

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items())


def json_chunks(value: Any, level: int = 0) -> Iterator[str]:
    if isinstance(value, Mapping):
        if not value:
            yield "{}"
            return
        inner = _INDENT * (level + 1)
        yield "{"
        for n, key in enumerate(sorted(value)):
            yield f"{',' if n else ''}\n{inner}{json.dumps(key, ensure_ascii=False)}: "
            yield from json_chunks(value[key], level + 1)
        yield f"\n{_INDENT * level}}}"
    elif isinstance(value, list | tuple | Lazy):
        inner = _INDENT * (level + 1)
        empty = True
        plain = isinstance(value, Lazy)
        for item in value:
            yield f"{'[' if empty else ','}\n{inner}"
            empty = False
            if plain:  # one call per item rather than a generator per value
                yield indented(item, level + 1)
            else:
                yield from json_chunks(item, level + 1)
        yield "[]" if empty else f"\n{_INDENT * level}]"
    else:
        yield json.dumps(value, ensure_ascii=False)


# json's own string encoder (C when available), as `json.dumps(ensure_ascii=False)` uses it.
_STRING: Callable[[str], str] = json.encoder.encode_basestring


class _Unusual(Exception):
    """A value the fast path does not write exactly as json would: json writes it instead."""


def indented(value: Any, level: int = 0) -> str:
    """`json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)` with every line after
    the first indented by `level` more steps: the same text, but built with joins rather than
    json's pure-Python indenting encoder (a big report's items were most of its cost)."""
    try:
        return _fast(value, level)
    except _Unusual:
        text = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)
        return text.replace("\n", "\n" + _INDENT * level)


def _fast(value: Any, level: int) -> str:
    kind = type(value)
    if kind is str:
        return _STRING(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return int.__repr__(value)
    if kind is dict:
        if not value:
            return "{}"
        if any(type(key) is not str for key in value):
            raise _Unusual  # json converts such keys (or refuses to sort them)
        inner = "\n" + _INDENT * (level + 1)
        items = [f"{_STRING(key)}: {_fast(value[key], level + 1)}" for key in sorted(value)]
        return "{" + inner + ("," + inner).join(items) + "\n" + _INDENT * level + "}"
    if kind is list or kind is tuple:
        if not value:
            return "[]"
        inner = "\n" + _INDENT * (level + 1)
        items = [_fast(item, level + 1) for item in value]
        return "[" + inner + ("," + inner).join(items) + "\n" + _INDENT * level + "]"
    raise _Unusual  # floats (NaN, infinities), subclasses, anything json has its own say on
