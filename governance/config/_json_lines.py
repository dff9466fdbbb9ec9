"""Strict JSON with the 1-based line of every key and item, for errors that name file and line.

`load_json` refuses, as the caller's error class with file, line and column: text the checks
of governance.config._text refuse, nesting deeper than MAX_DEPTH (found by a flat bracket scan
before the recursive decoder runs), syntax errors, duplicate keys, NaN/Infinity and numbers
too large to be finite or to read, and lone surrogates written as `\\u` escapes. The lines of
keys are computed only when an error needs them (`JsonDocument.line_of`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from governance.config._text import (
    MAX_DEPTH,
    ErrorFactory,
    check_text,
    located,
    lone_surrogate,
    position,
    surrogate_message,
)
from governance.config._yaml_lines import Loc, data_loc, format_loc
from governance.core._errors import ConfigError

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
_TOKEN = re.compile(r'[ \t\n\r]*(?:(")|([{}\[\]:,])|([^ \t\n\r{}\[\]:,"]+))')
_MAX_DIGITS = 100


@dataclass(frozen=True, slots=True)
class JsonDocument:
    """Parsed JSON and the text it came from, to find the line of any location in it."""

    data: Any
    text: str = field(repr=False)
    _lines: dict[Loc, int] = field(default_factory=dict, repr=False, compare=False)

    def line_of(self, loc: Loc) -> int:
        """The line of `loc`, or of its deepest part present in the file (1 for the root)."""
        if not self._lines:
            self._lines.update(_scan(self.text)[0])
        _, existing = data_loc(self.data, loc)
        return self._lines.get(existing, 1)

    def where(self, loc: Loc) -> tuple[int, str]:
        """(line, `a.b[2]` as the user would name it) of one validation error's location."""
        shown, _ = data_loc(self.data, loc)
        return self.line_of(loc), format_loc(shown)


class _Refused(Exception):
    """A value the decoder's hooks refuse; located afterwards by its token."""

    def __init__(self, token: str, message: str) -> None:
        super().__init__(message)
        self.token = token
        self.message = message


def _no_constant(token: str) -> Any:
    raise _Refused(token, f"{token} is not a finite number (not allowed in JSON); write a number")


def _parse_int(token: str) -> int:
    if len(token.lstrip("-")) > _MAX_DIGITS:
        raise _Refused(token, f"a number of {len(token)} digits is too long to read; shorten it")
    return int(token)


def _parse_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value) or len(token) > 2 * _MAX_DIGITS:
        raise _Refused(token, f"the number {token[:40]} is too large to read; shorten it")
    return value


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _Refused("", f"duplicate key {key!r}")
        result[key] = value
    return result


def load_json(text: str, path: str, error_factory: ErrorFactory, *, subject: str) -> JsonDocument:
    """Parse one JSON document; every problem is `error_factory(path, line, message)`."""
    check_text(text, path, error_factory, subject=subject, yaml_breaks=False)
    if not text.strip():
        raise error_factory(path, 1, f"the {subject} is empty: it must hold a JSON object")
    blanked = _STRING.sub(lambda m: '"' + " " * (len(m.group()) - 2) + '"', text)
    depth = 0
    for bracket in _BRACKET.finditer(blanked):
        depth += 1 if bracket.group() in "[{" else -1
        if depth > MAX_DEPTH:
            line, column = position(text, bracket.start())
            raise located(
                error_factory,
                path,
                line,
                column,
                f"the {subject} nests arrays and objects more than {MAX_DEPTH} levels deep; "
                "flatten it",
            )
    try:
        data = json.loads(
            text,
            object_pairs_hook=_unique,
            parse_constant=_no_constant,
            parse_int=_parse_int,
            parse_float=_parse_float,
        )
    except json.JSONDecodeError as exc:
        raise located(
            error_factory, path, exc.lineno, exc.colno, f"not valid JSON: {exc.msg}"
        ) from None
    except _Refused as exc:
        raise _refused(exc, text, blanked, path, error_factory) from None
    except (RecursionError, ValueError) as exc:  # a last resort: checked above
        raise error_factory(path, 1, f"the {subject} cannot be read as JSON ({exc})") from None
    document = JsonDocument(data=data, text=text)
    found = _surrogate(data)
    if found is not None:
        loc, value = found
        raise error_factory(path, document.line_of(loc), f"{surrogate_message(value)}")
    return document


def _refused(
    exc: _Refused, text: str, blanked: str, path: str, error_factory: ErrorFactory
) -> ConfigError:
    if not exc.token:  # a duplicate key: the scan finds the second occurrence
        lines, duplicates = _scan(text)
        if duplicates:
            loc, line = duplicates[0]
            first = lines.get(loc, 1)
            return error_factory(
                path,
                line,
                f"duplicate key {loc[-1]!r}{f' in {format_loc(loc[:-1])}' if loc[:-1] else ''} "
                f"(first on line {first}): an object may name each key once; delete one",
            )
        return error_factory(path, 1, exc.message)
    token = re.compile(rf"(?<![\w.+-]){re.escape(exc.token)}(?![\w.+-])")
    found = token.search(blanked)
    if found is None:
        return error_factory(path, 1, exc.message)
    line, column = position(text, found.start())
    return located(error_factory, path, line, column, exc.message)


def _surrogate(data: Any) -> tuple[Loc, str] | None:
    """The location and text of the first string (key or value) holding a lone surrogate."""
    stack: list[tuple[Loc, Any]] = [((), data)]
    while stack:
        loc, value = stack.pop()
        if isinstance(value, str):
            if lone_surrogate(value) is not None:
                return loc, value
        elif isinstance(value, dict):
            for key, item in value.items():
                if lone_surrogate(key) is not None:
                    return (*loc, key), key
                stack.append(((*loc, key), item))
        elif isinstance(value, list):
            stack.extend(((*loc, index), item) for index, item in enumerate(value))
    return None


def _scan(text: str) -> tuple[dict[Loc, int], list[tuple[Loc, int]]]:
    """(line of every key and item, (location, line) of every repeated key), without recursion.

    Tolerant: it stops at the first thing that is not JSON and returns what it found so far.
    """
    lines: dict[Loc, int] = {}
    duplicates: list[tuple[Loc, int]] = []
    # A frame: [loc, is_object, next index, keys seen, expecting a key, pending key]
    stack: list[list[Any]] = []
    pos, line, counted = 0, 1, 0
    while True:
        match = _TOKEN.match(text, pos)
        if match is None:
            break
        start = match.start(match.lastindex or 0)
        line += text.count("\n", counted, start)
        counted = start
        frame = stack[-1] if stack else None
        if match.group(2):
            char = match.group(2)
            pos = match.end()
            if char in "]}":
                if stack:
                    stack.pop()
            elif char == "," and frame is not None and frame[1]:
                frame[4] = True
            elif char in "[{":
                loc = _value_loc(frame, lines, line)
                stack.append([loc, char == "{", 0, set(), char == "{", None])
            continue
        if match.group(1):
            try:
                value, pos = scanstring(text, start + 1)
            except (ValueError, IndexError):
                break
            if frame is not None and frame[1] and frame[4]:
                loc = (*frame[0], value)
                if value in frame[3]:
                    duplicates.append((loc, line))
                else:
                    frame[3].add(value)
                    lines[loc] = line
                frame[4], frame[5] = False, value
                continue
        else:
            pos = match.end()
        _value_loc(frame, lines, line)
    return lines, duplicates


def _value_loc(frame: list[Any] | None, lines: dict[Loc, int], line: int) -> Loc:
    """The location of the value starting here; array items get their line recorded."""
    if frame is None:
        return ()
    if frame[1]:
        return (*frame[0], frame[5])
    loc: Loc = (*frame[0], frame[2])
    frame[2] += 1
    lines[loc] = line
    return loc
