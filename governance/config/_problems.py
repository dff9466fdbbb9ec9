"""Problems found in an operator's file, reported the same way by every loader: the first one
(by line) as the error's message, up to nine more as `FILE:LINE: message`, then a count."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from governance.config._yaml_lines import Loc, data_loc, format_loc

MAX_SHOWN = 10
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
        return (
            f"unknown key {shown[-1]!r}: remove it or fix its spelling "
            f"(the schema is governance/data/{schema_name})"
        )
    if kind == "missing":
        return f"missing required key {shown[-1]!r}"
    return pydantic_message(error)


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
