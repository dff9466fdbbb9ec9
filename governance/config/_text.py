"""The text of a file an operator wrote, checked before any parser sees it.

Every loader (policy, MCP config, pins, scenarios, baselines, stored traces) reads bytes from
a user; what no parser should be handed is refused here with the file, line, column and a fix:
files over a size cap, anything but UTF-8 (a UTF-8 BOM is dropped, UTF-16/32 is named), control
characters, NUL bytes and lone surrogates. Parsers then see text they accept.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Protocol

from governance.core._errors import ConfigError

MAX_BYTES = 4 * 1024 * 1024
"""Larger YAML/JSON files are refused: a policy, scenario or baseline is a few kilobytes."""

MAX_DEPTH = 64
"""Deeper nesting is refused before any recursive parser or validator walks it."""

# Characters YAML refuses (PyYAML's Reader.NON_PRINTABLE), which JSON text never needs either.
_FORBIDDEN = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_YAML_BREAKS = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


class ErrorFactory(Protocol):
    """Builds the caller's error class from (path, 1-based line or None, message)."""

    def __call__(self, path: str, line: int | None, message: str) -> ConfigError: ...


def position(text: str, index: int, *, yaml_breaks: bool = False) -> tuple[int, int]:
    """The 1-based (line, column) of `text[index]`.

    JSON counts `\\n` only (as json.JSONDecodeError does); YAML also breaks lines at a lone
    `\\r`, NEL, U+2028 and U+2029, so a position matches PyYAML's own marks.
    """
    before = text[:index]
    if yaml_breaks:
        breaks = list(_YAML_BREAKS.finditer(before))
        start = breaks[-1].end() if breaks else 0
        return len(breaks) + 1, index - start + 1
    return before.count("\n") + 1, index - (before.rfind("\n") + 1) + 1


def char_name(char: str) -> str:
    """`U+0007` plus the character's name when it has one."""
    code = f"U+{ord(char):04X}"
    if "\ud800" <= char <= "\udfff":
        return f"{code} (a lone UTF-16 surrogate)"
    name = unicodedata.name(char, "") or _CONTROL_NAMES.get(char, "")
    return f"{code} ({name.lower()})" if name else code


_CONTROL_NAMES = {"\x00": "NUL", "\x1b": "ESCAPE", "\x7f": "DELETE"}


def located(
    factory: ErrorFactory, path: str, line: int | None, column: int | None, message: str
) -> ConfigError:
    """`factory`'s error with the column kept as an attribute and named in the message."""
    where = f" (column {column})" if column is not None else ""
    error = factory(path, line, f"{message}{where}" if where else message)
    error.column = column
    return error


def read_capped(path: Path, error_factory: ErrorFactory, *, subject: str) -> bytes:
    """The file's bytes, refusing one over MAX_BYTES without reading all of it.

    OSError (missing, unreadable) propagates: each caller words that case itself.
    """
    with path.open("rb") as handle:
        raw = handle.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise _too_big(error_factory, str(path), subject, raw[:MAX_BYTES].count(b"\n") + 1)
    return raw


def _too_big(error_factory: ErrorFactory, path: str, subject: str, line: int) -> ConfigError:
    """Names the line where the file crosses the cap: where to start trimming."""
    return error_factory(
        path,
        line,
        f"the {subject} is over the {MAX_BYTES:,}-byte limit on files Proctor reads (a "
        "policy, scenario or baseline is a few kilobytes); split it or trim it",
    )


def decode_text(
    raw: bytes, path: str, error_factory: ErrorFactory, *, subject: str, yaml_breaks: bool = True
) -> str:
    """UTF-8 text within the size cap with no forbidden characters (a UTF-8 BOM is dropped)."""
    if len(raw) > MAX_BYTES:
        raise _too_big(error_factory, path, subject, raw[:MAX_BYTES].count(b"\n") + 1)
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            raise error_factory(
                path, 1, f"the {subject} is {encoding} text; save it as UTF-8 (without a BOM)"
            )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise located(
            error_factory,
            path,
            line,
            column,
            f"the {subject} is not UTF-8 text (byte 0x{raw[exc.start]:02X} cannot start or "
            "continue a UTF-8 character); save it as UTF-8",
        ) from None
    check_text(text, path, error_factory, subject=subject, yaml_breaks=yaml_breaks)
    return text


def check_text(
    text: str, path: str, error_factory: ErrorFactory, *, subject: str, yaml_breaks: bool = True
) -> None:
    """Refuse text over the cap or holding a character no configuration file may hold."""
    if len(text) > MAX_BYTES:
        raise _too_big(error_factory, path, subject, text[:MAX_BYTES].count("\n") + 1)
    found = _FORBIDDEN.search(text)
    if found is None:
        return
    char = found.group()
    line, column = position(text, found.start(), yaml_breaks=yaml_breaks)
    if _SURROGATE.fullmatch(char):
        fix = "the text was mis-decoded or mis-encoded; save the file as UTF-8"
    elif char == "\x00":
        fix = "a NUL byte often means the file is binary or UTF-16; save it as UTF-8 text"
    else:
        fix = (
            "remove it, or write it as an escape (\\x.. or \\u....) inside a double-quoted "
            "string"
        )
    raise located(
        error_factory,
        path,
        line,
        column,
        f"the {subject} contains the character {char_name(char)}, which is not allowed in "
        f"the file's text; {fix}",
    )


def lone_surrogate(value: str) -> str | None:
    """The first lone UTF-16 surrogate in `value` (after pairing escaped pairs), else None."""
    found = _SURROGATE.search(value)
    return None if found is None else found.group()


def pair_surrogates(value: str) -> str:
    """`"\\ud83d\\ude00"` escapes in YAML decode to two surrogates: join each valid pair."""
    if _SURROGATE.search(value) is None:
        return value
    try:
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        return value  # a lone one remains: the caller refuses it


def surrogate_message(value: str) -> str:
    char = lone_surrogate(value) or ""
    return (
        f"a string holds {char_name(char)}, written as a \\u escape; it cannot be stored or "
        "printed as UTF-8: remove the escape or write the character itself"
    )
