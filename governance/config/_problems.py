"""Problems found in an operator's file, reported the same way by every loader: the first one
(by line) as the error's message, up to nine more as `FILE:LINE: message`, then a count."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from governance.config._yaml_lines import Loc, data_loc, format_loc

MAX_SHOWN = 10
_DATA = Path(__file__).resolve().parent.parent / "data"
Error = Mapping[str, Any]  # one entry of pydantic's ValidationError.errors()


def pydantic_message(error: Mapping[str, Any]) -> str:
    """A validation error's text without pydantic's "Value error, " prefix."""
    return str(error["msg"]).removeprefix("Value error, ")


def first_and_rest(path: str, found: Iterable[tuple[int, str]]) -> tuple[int, str]:
    """(line of the first problem, the message: that problem, then the others with their
    places). `found` holds (line, message) pairs and must not be empty."""
    ordered = sorted(found, key=lambda item: item[0])
    line, message = ordered[0]
    rest = [f"{path}:{ln}: {msg}" for ln, msg in ordered[1:MAX_SHOWN]]
    if len(ordered) > MAX_SHOWN:
        rest.append(f"... and {len(ordered) - MAX_SHOWN} more problems")
    return line, "\n".join([message, *rest])


def schema_message(error: Error, shown: Loc, schema_name: str) -> str:
    """The text for one validation error, naming the committed schema for an unknown key."""
    kind = error["type"]
    if kind == "extra_forbidden":
        key = str(shown[-1])
        hint = did_you_mean(key, allowed_keys(_schema(schema_name), shown[:-1]))
        return (
            f"unknown key {key!r}{hint}: remove it or fix its spelling "
            f"(the schema is governance/data/{schema_name})"
        )
    if kind == "missing":
        return f"missing required key {shown[-1]!r}"
    return pydantic_message(error)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest of `choices` to a misspelt `word`, else ""."""
    import difflib  # only when a file has a problem: keeps `proctor policy check` cold

    close = difflib.get_close_matches(word, sorted(set(choices)), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


@functools.lru_cache(maxsize=4)
def _schema(name: str) -> Mapping[str, Any]:
    # Read only when a file has an unknown key: the committed schema is the allowed-key list.
    try:
        loaded = json.loads((_DATA / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def allowed_keys(schema: Mapping[str, Any], loc: Sequence[str | int]) -> set[str]:
    """The property names a JSON Schema allows at `loc` (a path into a document), over every
    branch of a union there; empty when the schema does not say."""
    nodes = list(_branches(schema, schema))
    for part in loc:
        step: list[Mapping[str, Any]] = []
        for node in nodes:
            for child in _children(node, part):
                if isinstance(child, Mapping):
                    step += _branches(schema, child)
        nodes = step
    return {key for node in nodes for key in node.get("properties") or {}}


def _children(node: Mapping[str, Any], part: str | int) -> list[Any]:
    """The schemas that may describe `node[part]`: items, a named property, the patterns its
    name matches, else additionalProperties."""
    if isinstance(part, int):
        return [node.get("items")]
    named = (node.get("properties") or {}).get(part)
    if named is not None:
        return [named]
    patterns = node.get("patternProperties") or {}
    matched = [sub for pattern, sub in patterns.items() if re.search(pattern, part)]
    return matched or [node.get("additionalProperties")]


def _branches(root: Mapping[str, Any], node: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """`node` with its `$ref` resolved and its anyOf/oneOf/allOf spread out."""
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for name in ref[2:].split("/"):
            target = target.get(name, {}) if isinstance(target, Mapping) else {}
        if isinstance(target, Mapping):
            yield from _branches(root, target)
    yield node
    for word in ("anyOf", "oneOf", "allOf"):
        for branch in node.get(word) or ():
            if isinstance(branch, Mapping):
                yield from _branches(root, branch)


def located(
    errors: Iterable[Error],
    data: Any,
    lines: Mapping[Loc, int],
    *,
    locate: Callable[[Error], Loc],
    message: Callable[[Error, Loc], str],
) -> list[tuple[int, str]]:
    """(line, `where: message`) for each validation error, one per location: `locate` maps an
    error to its place in `data`, which is then shown as the file spells it."""
    found: list[tuple[int, str]] = []
    seen: set[str] = set()
    for error in errors:
        shown, existing = data_loc(data, locate(error))
        where = format_loc(shown)
        if where in seen:
            continue  # one message per location is enough
        seen.add(where)
        text = message(error, shown)
        found.append((lines.get(existing, 1), f"{where}: {text}" if where else text))
    return found
