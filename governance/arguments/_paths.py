"""The one reading of a path argument, shared by the policy, the firewall and the sandbox.

A path is judged and executed in its canonical form, so no two parts of Proctor can resolve the
same string to different files. The decided answers:

- relative to the workspace root; absolute paths and drive letters are refused;
- `\\` is refused, not translated: it is a separator on Windows and a filename character on
  POSIX, and guessing either way is how `secrets/a\\../../x` once slipped past the policy;
- NUL, control characters, Unicode format characters (zero-width, bidi overrides) and lone
  surrogates are refused: they make a path display as something it is not;
- Unicode is normalised to NFC, so the policy and the filesystem compare the same code points;
- `.`, empty components and `..` are resolved lexically; climbing above the root is refused, and
  the canonical form never contains `..`, so no later reader can resolve it against a symlink;
- case is significant (exact comparison); policies that exclude a folder compare case-folded.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata

from governance.core._errors import InputRefused

MAX_PATH_CHARS = 4096

_DRIVE = re.compile(r"^[A-Za-z]:")

# An ASCII path already in canonical form: `/`-separated components, none empty, `.` or `..`,
# no backslash and no control character (ASCII has no format characters or surrogates, and NFC
# leaves it unchanged). The drive-letter test stays separate. `\Z`, not `$`: `$` would also
# match before a final newline.
_ASCII_PART = r"(?!\.\.?(?:/|\Z))[^/\\\x00-\x1f\x7f]+"
_ASCII_CANONICAL = re.compile(rf"{_ASCII_PART}(?:/{_ASCII_PART})*")


class PathRefused(InputRefused):
    """A path argument that has no single safe reading."""


def _refuse_characters(value: str) -> None:
    for ch in value:
        category = unicodedata.category(ch)
        if ch == "\x00" or category == "Cc":
            raise PathRefused("control_character", f"path {value!r} contains a control character")
        if category == "Cf":
            raise PathRefused(
                "invisible_character",
                f"path {value!r} contains an invisible formatting character (U+{ord(ch):04X})",
            )
        if category == "Cs":
            raise PathRefused("invalid_unicode", f"path {value!r} contains a lone surrogate")


def canonical_path(value: object) -> str:
    """The canonical relative form of `value` (`.` for the root), or PathRefused."""
    if not isinstance(value, str):
        raise PathRefused("not_a_string", f"a path must be a string, not {type(value).__name__}")
    if not value:
        raise PathRefused("empty_path", "a path must not be empty")
    if len(value) > MAX_PATH_CHARS:
        raise PathRefused("path_too_long", f"a path must be at most {MAX_PATH_CHARS} characters")
    _refuse_characters(value)
    if "\\" in value:
        raise PathRefused(
            "backslash_in_path",
            f"path {value!r} contains '\\': use '/' as the separator",
        )
    path = unicodedata.normalize("NFC", value)
    if path.startswith("/") or _DRIVE.match(path):
        raise PathRefused(
            "absolute_path", f"path {value!r} is absolute: give a path relative to the workspace"
        )
    normal = posixpath.normpath(path)
    if normal == ".." or normal.startswith("../"):
        raise PathRefused("path_escapes_root", f"path {value!r} climbs above the workspace root")
    return normal


def canonical_or_none(value: object) -> str | None:
    """`canonical_path(value)`, or None when it is refused."""
    try:
        return canonical_path(value)
    except PathRefused:
        return None


def is_canonical(value: object) -> bool:
    """True when `value` is a path already in its canonical form (what the firewall hands on).

    On the policy's hot path: a plain ASCII string is answered by one regex match instead of a
    per-character Unicode walk; anything else takes the full reading. Both give one answer.
    """
    if type(value) is str and value.isascii():
        if value == ".":
            return True
        return (
            len(value) <= MAX_PATH_CHARS
            and _ASCII_CANONICAL.fullmatch(value) is not None
            and _DRIVE.match(value) is None
        )
    return isinstance(value, str) and canonical_or_none(value) == value
