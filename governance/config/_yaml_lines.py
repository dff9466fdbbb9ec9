"""Safe YAML with the 1-based line of every key and item, for errors that name file and line.

Shared by the policy, MCP config and scenario loaders; each passes the error class it raises.
Duplicate keys, merge keys, tags other than plain JSON types, self-referencing aliases, alias
bombs, nesting deeper than MAX_DEPTH, non-finite numbers and lone surrogates are refused rather
than guessed at; the text itself is checked first (governance.config._text). Every problem is
the caller's error class: no PyYAML, recursion or Unicode exception escapes.

Where PyYAML has libyaml, a plain document (one, without anchors, aliases or explicit tags, and
nothing to refuse: a scenario suite, a policy) is built straight from libyaml's parser events
in one iterative pass, with the same resolver, constructor, values and lines. Anything else is
composed by libyaml's C parser (~15x faster than PyYAML's) and walked by the same code as the
pure-Python loader's nodes: same tags, scalar types, checks and lines. libyaml's composer
recurses in C without a depth guard, so a non-recursive pass over its events measures the
nesting first; any document the fast paths do not load cleanly is loaded again by the
pure-Python loader, whose result or error is the one returned.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import yaml
from yaml.events import (
    CollectionEndEvent,
    CollectionStartEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)
from yaml.nodes import CollectionNode, MappingNode, Node, ScalarNode, SequenceNode

from governance.config._text import (
    MAX_DEPTH,
    ErrorFactory,
    check_text,
    lone_surrogate,
    pair_surrogates,
    surrogate_message,
)
from governance.config._text import decode_text as decode_text
from governance.core._errors import ConfigError

Loc = tuple[str | int, ...]

_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_PLAIN_TAGS = frozenset(
    f"tag:yaml.org,2002:{kind}" for kind in ("str", "int", "float", "bool", "null")
)
# A date written unquoted stays the text it is: configuration values are JSON types.
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
MAX_NODES = 100_000
_CONTAINERS = (MappingNode, SequenceNode)


class _Walk:
    """The walk from composed nodes to data, shared by both loaders: the 1-based line of every
    key and item, and every refusal. Mixed into a loader class (parser + SafeConstructor)."""

    def __init__(self, text: str, path: str, error_factory: ErrorFactory, subject: str) -> None:
        super().__init__(text)  # type: ignore[call-arg]
        self.source_path = path
        self.error_factory = error_factory
        self.subject = subject
        self.lines: dict[Loc, int] = {}
        self._visited = 0
        self._depth = 0

    def error(self, node: Node, message: str) -> ConfigError:
        return self.error_factory(self.source_path, node.start_mark.line + 1, message)

    def _too_deep(self, line: int | None) -> ConfigError:
        return self.error_factory(
            self.source_path,
            line,
            f"the {self.subject} nests lists and mappings more than {MAX_DEPTH} levels deep; "
            "flatten it",
        )

    def to_data(
        self, node: Node, loc: Loc = (), active: frozenset[int] = frozenset(), reading: int = 0
    ) -> Any:
        # `reading` is the furthest line on the way here: an alias points back to its anchor,
        # and a problem found while expanding it is reported where the alias is used.
        line = node.start_mark.line + 1
        if line > reading:
            reading = line
        self._visited += 1
        if self._visited > MAX_NODES:
            raise self.error_factory(
                self.source_path,
                reading,
                f"the {self.subject} has more than {MAX_NODES} YAML nodes (counting each use of "
                "an alias); write it out without aliases, or split it",
            )
        if not isinstance(node, _CONTAINERS):
            # `active` holds only containers (the nodes above this one): a scalar is never
            # its own ancestor, so it needs neither the depth nor the alias check.
            return self._scalar(node, loc)
        if len(loc) >= MAX_DEPTH:
            raise self._too_deep(reading)  # aliases can nest deeper than the text does
        if id(node) in active:
            raise self.error(node, "a YAML alias refers to itself; write the value out")
        return self._collection(node, loc, active | {id(node)}, reading)

    def _collection(self, node: Node, loc: Loc, inner: frozenset[int], reading: int) -> Any:
        lines = self.lines
        if isinstance(node, MappingNode):
            if node.tag != _MAP_TAG:
                raise self.error(node, f"unsupported YAML tag {node.tag!r}; remove it")
            result: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = self._key(key_node, loc)
                where = (*loc, key)
                if key in result:
                    first = lines[where]
                    raise self.error(
                        key_node,
                        f"duplicate key {key!r}{_in(loc)} (first on line {first}): a mapping may "
                        "name each key once; delete or merge one of them",
                    )
                lines[where] = key_node.start_mark.line + 1
                result[key] = self.to_data(value_node, where, inner, reading)
            return result
        if node.tag != _SEQ_TAG:
            raise self.error(node, f"unsupported YAML tag {node.tag!r}; remove it")
        items = []
        for index, item in enumerate(node.value):
            where = (*loc, index)
            lines[where] = item.start_mark.line + 1
            items.append(self.to_data(item, where, inner, reading))
        return items

    def _scalar(self, node: Node, loc: Loc) -> Any:
        """A string, finite number, boolean or null; anything else is refused at its line."""
        if node.tag == _STR_TAG or node.tag == _TIMESTAMP_TAG:
            return self._string(node, node.value, loc)  # what the str constructor returns
        if node.tag not in _PLAIN_TAGS:
            raise self.error(
                node,
                f"invalid YAML: unsupported tag {node.tag!r}{_in(loc)}; remove it (the "
                f"{self.subject} may hold only strings, numbers, booleans, null, lists and "
                "mappings)",
            )
        try:
            value = self.construct_object(node, deep=True)  # type: ignore[attr-defined]
        except (ValueError, OverflowError, KeyError, IndexError):
            # PyYAML's constructors fail with any of these on an explicit tag's bad value
            # (`!!bool nope`, `!!int ''`); an implicit number fails only when too long.
            if self.resolve(ScalarNode, node.value, (True, False)) == node.tag:  # type: ignore[attr-defined]
                message = f"the number {_short(node.value)}{_in(loc)} cannot be read; shorten it"
            else:
                kind = node.tag.rsplit(":", 1)[-1]
                message = (
                    f"{_short(node.value)}{_in(loc)} cannot be read as {kind}; fix the value "
                    f"or remove the !!{kind} tag"
                )
            raise self.error(node, message) from None
        if isinstance(value, float) and not math.isfinite(value):
            raise self.error(
                node,
                f"{node.value!r}{_in(loc)} is not a finite number; write a finite number, or "
                "quote it to mean the text",
            )
        if isinstance(value, str):
            return self._string(node, value, loc)
        return value

    def _string(self, node: Node, value: str, loc: Loc) -> str:
        if value.isascii() or lone_surrogate(value) is None:
            return value  # nothing to pair: no surrogate is ASCII, and one search for the rest
        value = pair_surrogates(value)
        if lone_surrogate(value) is not None:
            raise self.error(node, f"{surrogate_message(value)}{_in(loc)}")
        return value

    def _key(self, node: Node, loc: Loc) -> str:
        if node.tag == _MERGE_TAG:
            raise self.error(node, "YAML merge keys ('<<') are not supported; write the keys out")
        if not isinstance(node, ScalarNode):
            raise self.error(node, f"a key{_in(loc)} must be a plain string")
        key = self._scalar(node, loc)
        if not isinstance(key, str):
            raise self.error(node, f"key {node.value!r}{_in(loc)} must be a string; quote it")
        return key


class _LineLoader(_Walk, yaml.SafeLoader):
    """The pure-Python loader: always there, and the one whose errors are reported."""

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        # PyYAML composes recursively: refuse deep nesting before the stack runs out.
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if not isinstance(event, SequenceStartEvent | MappingStartEvent):
            return super().compose_node(parent, index)
        if self._depth >= MAX_DEPTH:
            mark = event.start_mark
            raise self._too_deep(None if mark is None else mark.line + 1)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_CLoader: Any = getattr(yaml, "CSafeLoader", None) if yaml.__with_libyaml__ else None


class _Differs(Exception):
    """The document is one libyaml reads differently from PyYAML: load it the slow way."""


class _FastWalk(_Walk):
    """The walk over libyaml's nodes, which also refuses what libyaml reads differently.

    In a flow collection PyYAML ends a plain scalar at `?`, libyaml does not (`[a?b]`): such a
    scalar is an error to one and text to the other.
    """

    _in_flow = False

    def _collection(self, node: Node, loc: Loc, inner: frozenset[int], reading: int) -> Any:
        if self._in_flow or not isinstance(node, CollectionNode) or not node.flow_style:
            return super()._collection(node, loc, inner, reading)
        self._in_flow = True
        try:
            return super()._collection(node, loc, inner, reading)
        finally:
            self._in_flow = False

    def _scalar(self, node: Node, loc: Loc) -> Any:
        # libyaml marks a plain scalar's style "" where PyYAML has None
        if self._in_flow and isinstance(node, ScalarNode) and not node.style and "?" in node.value:
            raise _Differs
        return super()._scalar(node, loc)


_FastLoader: Any = None
if _CLoader is not None:

    class _FastLoader(_FastWalk, _CLoader):  # type: ignore[no-redef,misc]
        """libyaml's parser and composer, PyYAML's resolver and constructor, the shared walk."""


# Where libyaml and PyYAML read the same text differently (found by the differential test):
# libyaml takes a tab as a separator where PyYAML refuses it, resolves a lone `!` tag to a
# string where PyYAML resolves the plain scalar, skips a U+FEFF anywhere where PyYAML takes
# one past the start as text (a policy's nesting would hinge on an invisible character), and
# takes a `#` right after a block scalar's header (`|#`, `>-#`) as a comment where PyYAML
# refuses it. Text with any of them goes the pure-Python way.
_LIBYAML_DIFFERS = re.compile(r"\t|(?<!\w)!|[|>][-+0-9]*#")
_LONE_BANG = re.compile(r"(?<!\w)!")
_HEADER_COMMENT = re.compile(r"[|>][-+0-9]*#")


def _libyaml_differs(text: str) -> bool:
    """`_LIBYAML_DIFFERS.search(text)`, found in C-speed scans: that pattern tries its
    lookbehind at every position of the text; this one only where a `!` is."""
    if "\t" in text or "\ufeff" in text[1:]:
        return True
    if "#" in text and _HEADER_COMMENT.search(text):
        return True
    at = text.find("!")
    while at != -1:
        if _LONE_BANG.match(text, at):  # the lookbehind sees the character before `at`
            return True
        at = text.find("!", at + 1)
    return False


def _nesting_within_limit(text: str) -> bool:
    """Whether libyaml may compose `text`: its nesting, counted over the parser's events (an
    iterative pass, no recursion), stays within MAX_DEPTH."""
    parser = _CLoader(text)
    depth = 0
    try:
        while parser.check_event():
            event = parser.get_event()
            if isinstance(event, CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    return False
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
    finally:
        parser.dispose()
    return True


class _Unusual(Exception):
    """Outside what the event walk loads itself: the composing fast path (then, for anything
    it refuses, the pure-Python loader) takes the document."""


class _Open:
    """A mapping or list being filled by the event walk."""

    __slots__ = ("container", "flow", "key", "loc", "name")

    def __init__(self, container: dict[str, Any] | list[Any], loc: Loc, flow: bool) -> None:
        self.container = container
        self.loc = loc
        self.flow = flow  # inside a flow collection (`[..]`, `{..}`)
        self.name: str | None = None  # a mapping's key whose value comes next
        self.key: Loc = ()  # that key's location


def _load_events(text: str) -> tuple[Any, dict[Loc, int]] | None:
    """The plain document (one, no anchor, alias or explicit tag, nothing refused) built
    straight from libyaml's events, with every line: no node tree and one parse (the
    composing path parses twice, to bound the nesting its C composer recurses over). None for
    anything else, which the composing path loads or refuses exactly as before."""
    loader = _CLoader(text)
    try:
        if loader.yaml_path_resolvers:
            return None  # a tag would then depend on the path, not only on the value
        return _walk_events(loader)
    except Exception:  # noqa: BLE001 - _Unusual, or anything libyaml refuses: the next path words it
        return None
    finally:
        loader.dispose()


def _walk_events(loader: Any) -> tuple[Any, dict[Loc, int]]:
    """The same values, lines, node count and depth limit as `_Walk`, built from the events;
    `_Unusual` for whatever `_Walk` would refuse or treats specially."""
    get = loader.get_event
    if type(get()) is not StreamStartEvent:
        raise _Unusual
    event = get()
    if type(event) is StreamEndEvent:
        return None, {}
    if type(event) is not DocumentStartEvent:
        raise _Unusual
    lines: dict[Loc, int] = {}
    tags: dict[tuple[str, tuple[bool, bool]], str] = {}
    built: dict[tuple[str, str], Any] = {}
    stack: list[_Open] = []
    root: Any = None
    nodes = 0

    def scalar(event: Any, flow: bool) -> Any:
        value: str = event.value
        if flow and not event.style and "?" in value:
            raise _Unusual  # libyaml and PyYAML end such a plain scalar differently
        key = (value, event.implicit)
        tag = tags.get(key)
        if tag is None:
            tag = tags[key] = loader.resolve(ScalarNode, value, event.implicit)
        if tag == _STR_TAG or tag == _TIMESTAMP_TAG:
            result: Any = value
        elif tag in _PLAIN_TAGS:
            made = (tag, value)
            if made not in built:
                node = ScalarNode(tag, value, event.start_mark, event.end_mark, event.style)
                built[made] = loader.construct_object(node, deep=True)
            result = built[made]
            if isinstance(result, float) and not math.isfinite(result):
                raise _Unusual
        else:
            raise _Unusual  # a merge key, or a tag the walk refuses
        if isinstance(result, str) and not result.isascii() and lone_surrogate(result) is not None:
            raise _Unusual  # surrogates to pair (or refuse): the walk's
        return result

    while True:
        event = get()
        kind = type(event)
        if kind is MappingEndEvent or kind is SequenceEndEvent:
            stack.pop()
            continue
        if kind is DocumentEndEvent:
            break
        if kind is not ScalarEvent and kind is not MappingStartEvent:
            if kind is not SequenceStartEvent:
                raise _Unusual  # an alias, or anything unexpected
        if event.anchor is not None or event.tag is not None:
            raise _Unusual
        line = event.start_mark.line + 1
        where: Loc = ()
        flow = False
        if stack:
            top = stack[-1]
            container, flow = top.container, top.flow
            if type(container) is dict:
                if top.name is None:  # this event is a key
                    if kind is not ScalarEvent:
                        raise _Unusual
                    key = scalar(event, flow)
                    if type(key) is not str or key in container:
                        raise _Unusual  # a key that is no string, or a duplicate
                    top.name, top.key = key, (*top.loc, key)
                    lines[top.key] = line
                    continue
                where = top.key
            else:
                where = (*top.loc, len(container))
                lines[where] = line
        nodes += 1
        if nodes > MAX_NODES:
            raise _Unusual
        if kind is ScalarEvent:
            value = scalar(event, flow)
        else:
            if len(where) >= MAX_DEPTH:
                raise _Unusual
            value = {} if kind is MappingStartEvent else []
        if stack:
            top = stack[-1]
            if type(top.container) is dict:
                top.container[top.name] = value  # type: ignore[index]
                top.name = None
            else:
                top.container.append(value)  # type: ignore[union-attr]
        else:
            root = value
        if kind is not ScalarEvent:
            stack.append(_Open(value, where, flow or bool(event.flow_style)))
    if type(get()) is not StreamEndEvent:
        raise _Unusual  # a second document: the composing path words the error
    return root, lines


def _load_fast(
    text: str, path: str, error_factory: ErrorFactory, subject: str
) -> tuple[Any, dict[Loc, int]] | None:
    """The document through libyaml, or None when it must go the pure-Python way (no libyaml,
    too deep, or any problem: the pure-Python loader words the error)."""
    if _FastLoader is None or _libyaml_differs(text):
        return None
    plain = _load_events(text)
    if plain is not None:
        return plain
    try:
        if not _nesting_within_limit(text):
            return None
        loader = _FastLoader(text, path, error_factory, subject)
        try:
            root = loader.get_single_node()
            data = None if root is None else loader.to_data(root)
        finally:
            loader.dispose()
    except Exception:  # noqa: BLE001 - whatever failed, the slow loader decides and words it
        return None
    lines: dict[Loc, int] = loader.lines
    return data, lines


def _short(text: str) -> str:
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}... ({len(text)} characters)"


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
    check_text(text, path, error_factory, subject=subject)
    fast = _load_fast(text, path, error_factory, subject)
    if fast is not None:
        return fast
    return _load_slow(text, path, error_factory, subject)


def _load_slow(
    text: str, path: str, error_factory: ErrorFactory, subject: str
) -> tuple[Any, dict[Loc, int]]:
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
        raise error_factory(path, 1, f"invalid YAML: {exc}") from None
    except (ValueError, OverflowError) as exc:  # the scanner's own, e.g. `"\U7fffffff"`
        line = loader.get_mark().line + 1
        raise error_factory(path, line, f"invalid YAML: {exc}; fix the escape or value") from None
    except RecursionError:  # a last resort: compose_node and to_data refuse depth first
        raise error_factory(
            path, 1, f"the {subject} nests too deeply to read; flatten it"
        ) from None
    return data, loader.lines
