"""Safe YAML with the 1-based line of every key and item, for errors that name file and line.

Shared by the policy and scenario loaders; each passes the error class it raises. Duplicate
keys, merge keys, custom tags and self-referencing aliases are refused rather than guessed at.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from governance._errors import ConfigError

Loc = tuple[str | int, ...]
ErrorFactory = Callable[[str, int | None, str], ConfigError]
"""Builds the caller's error from (path, 1-based line or None, message)."""

_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"
MAX_NODES = 100_000


class _LineLoader(yaml.SafeLoader):
    """A SafeLoader whose mapping walk records the 1-based line of every key and item."""

    def __init__(self, text: str, path: str, error_factory: ErrorFactory, subject: str) -> None:
        super().__init__(text)
        self.source_path = path
        self.error_factory = error_factory
        self.subject = subject
        self.lines: dict[Loc, int] = {}
        self._visited = 0

    def error(self, node: Node, message: str) -> ConfigError:
        return self.error_factory(self.source_path, node.start_mark.line + 1, message)

    def to_data(self, node: Node, loc: Loc = (), active: frozenset[int] = frozenset()) -> Any:
        self._visited += 1
        if self._visited > MAX_NODES:
            raise self.error(node, f"the {self.subject} has more than {MAX_NODES} YAML nodes")
        if id(node) in active:
            raise self.error(node, "a YAML alias refers to itself; write the value out")
        inner = active | {id(node)}
        if isinstance(node, MappingNode):
            if node.tag != _MAP_TAG:
                raise self.error(node, f"unsupported YAML tag {node.tag!r}; remove it")
            result: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = self._key(key_node, loc)
                if key in result:
                    first = self.lines[(*loc, key)]
                    raise self.error(
                        key_node,
                        f"duplicate key {key!r}{_in(loc)} (first on line {first}): a mapping may "
                        "name each key once; delete or merge one of them",
                    )
                self.lines[(*loc, key)] = key_node.start_mark.line + 1
                result[key] = self.to_data(value_node, (*loc, key), inner)
            return result
        if isinstance(node, SequenceNode):
            if node.tag != _SEQ_TAG:
                raise self.error(node, f"unsupported YAML tag {node.tag!r}; remove it")
            items = []
            for index, item in enumerate(node.value):
                self.lines[(*loc, index)] = item.start_mark.line + 1
                items.append(self.to_data(item, (*loc, index), inner))
            return items
        return self.construct_object(node, deep=True)

    def _key(self, node: Node, loc: Loc) -> str:
        if node.tag == _MERGE_TAG:
            raise self.error(node, "YAML merge keys ('<<') are not supported; write the keys out")
        if not isinstance(node, ScalarNode):
            raise self.error(node, f"a key{_in(loc)} must be a plain string")
        key = self.construct_object(node, deep=True)
        if not isinstance(key, str):
            raise self.error(node, f"key {node.value!r}{_in(loc)} must be a string; quote it")
        return key


def _in(loc: Loc) -> str:
    return f" in {format_loc(loc)}" if loc else ""


def format_loc(loc: Loc) -> str:
    """`("rules", 2, "effect")` -> `rules[2].effect`."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def data_loc(data: Any, loc: Loc) -> tuple[Loc, Loc]:
    """(the path as the user wrote it, the deepest part of it that exists in the file)."""
    shown: list[str | int] = []
    existing: Loc = ()
    current = data
    for part in loc:
        if isinstance(current, Mapping) and isinstance(part, str):
            shown.append(part)
            if part not in current:
                break  # a missing key: name it, point at its parent
            current = current[part]
            existing = tuple(shown)
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            shown.append(part)
            current = current[part]
            existing = tuple(shown)
        else:
            break  # pydantic's own labels (union members, validator names)
    return tuple(shown), existing


def _yaml_problem(exc: yaml.MarkedYAMLError, text: str) -> tuple[int | None, str]:
    """The 1-based line of the problem and a readable description of it."""
    problem, context = exc.problem_mark, exc.context_mark
    mark = problem or context
    if problem is not None and context is not None and problem.index >= len(text.rstrip()):
        mark = context  # "unexpected end of stream": point at what was left open
    detail = ": ".join(str(p) for p in (exc.context, exc.problem) if p)
    if context is not None and mark is not None and context.line != mark.line:
        detail += f" (see line {context.line + 1})"
    return (mark.line + 1 if mark is not None else None), detail


def load_yaml_with_lines(
    text: str, path: str, error_factory: ErrorFactory, *, subject: str = "file"
) -> tuple[Any, dict[Loc, int]]:
    """Parse one YAML document: (data or None when empty, the line of every key and item).

    `lines` maps a location such as `("rules", 0, "effect")` to its 1-based line. Every
    problem is raised as `error_factory(path, line, message)`; `subject` names the file kind.
    """
    loader = _LineLoader(text, path, error_factory, subject)
    try:
        try:
            root = loader.get_single_node()
            data = None if root is None else loader.to_data(root)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        line, detail = _yaml_problem(exc, text)
        raise error_factory(path, line, f"invalid YAML: {detail}") from None
    except yaml.YAMLError as exc:
        raise error_factory(path, None, f"invalid YAML: {exc}") from None
    return data, loader.lines


def decode_text(raw: bytes, path: str, error_factory: ErrorFactory, *, subject: str) -> str:
    """UTF-8 (a BOM is dropped); anything else is an error naming the first bad line."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error_factory(
            path, line, f"the {subject} is not UTF-8 text; save it as UTF-8"
        ) from None
