"""Problems found in an operator's file, reported the same way by every loader: the first one
(by line) as the error's message, up to nine more as `FILE:LINE: message`, then a count."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

MAX_SHOWN = 10


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
