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
            if plain:  # one C-encoded call per item rather than a generator per value
                text = json.dumps(item, sort_keys=True, indent=2, ensure_ascii=False)
                yield text.replace("\n", "\n" + inner)
            else:
                yield from json_chunks(item, level + 1)
        yield "[]" if empty else f"\n{_INDENT * level}]"
    else:
        yield json.dumps(value, ensure_ascii=False)
