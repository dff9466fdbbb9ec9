"""Where a match in a reading of a text sits in the text as written.

The readings (`_normalise`) change lengths (NFKC expands ligatures, invisible characters go,
whitespace runs collapse, spelt-out letters join), so a match's offsets in a reading are not
offsets in the text. Here the same readings are built character by character, each output
character remembering the input character it came from. Only texts that matched pay for this.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from governance.screening import _normalise as norm
from governance.screening._confusables import LATIN_LOOKALIKES

_Traced = tuple[str, list[int]]


def _per_char(text: str, piece: Callable[[str], str]) -> _Traced:
    chars: list[str] = []
    origins: list[int] = []
    for index, ch in enumerate(text):
        out = piece(ch)
        chars.append(out)
        origins.extend([index] * len(out))
    return "".join(chars), origins


def _clean_char(ch: str) -> str:
    if ch.isascii():
        return ch
    return "".join(c for c in unicodedata.normalize("NFKC", ch) if not norm.is_invisible(c))


def _latin_char(ch: str) -> str:
    kept = "".join(c for c in unicodedata.normalize("NFD", ch) if unicodedata.category(c) != "Mn")
    return unicodedata.normalize("NFC", kept).translate(LATIN_LOOKALIKES)


def _sub(pattern: re.Pattern[str], repl: Callable[[re.Match[str]], str], t: _Traced) -> _Traced:
    """`pattern.sub(repl, text)` that carries the origins along (spread over a replacement)."""
    text, origins = t
    out: list[str] = []
    out_origins: list[int] = []
    pos = 0
    for match in pattern.finditer(text):
        out.append(text[pos : match.start()])
        out_origins.extend(origins[pos : match.start()])
        new = repl(match)
        span = match.end() - match.start()
        out.append(new)
        # Spread evenly, first on first and last on last, so a quote ends where the match did.
        out_origins.extend(
            origins[match.start() + (i * (span - 1)) // max(len(new) - 1, 1)]
            for i in range(len(new))
        )
        pos = match.end()
    out.append(text[pos:])
    out_origins.extend(origins[pos:])
    return "".join(out), out_origins


def _collapse(t: _Traced) -> _Traced:
    return _sub(norm.WHITESPACE, lambda m: " ", t)


def traced(text: str, reading: str) -> _Traced:
    """The reading of `text` (as `_normalise.readings` builds it) with per-character origins."""
    clean, origins = _per_char(text, lambda ch: _clean_char(ch).translate(norm.APOSTROPHES))
    if reading == "normal":
        folded, more = _per_char(clean, str.casefold)
        return _collapse((folded, [origins[i] for i in more]))
    latin, more = _per_char(clean, lambda ch: _latin_char(ch).casefold().translate(norm.LEET))
    t: _Traced = (latin, [origins[i] for i in more])
    if norm.SPELT_HINT.search(latin) is not None:
        t = _sub(norm.SPELT, lambda m: m.group(0).replace(m.group(1), ""), t)
    return _collapse(t)


def locate(text: str, reading: str, start: int, end: int) -> tuple[int, int]:
    """Offsets in `text` of `reading[start:end]`; the whole text when the character-by-character
    reading differs from the real one (a composed sequence NFKC joins across characters)."""
    actual = norm.readings(text)
    form = actual.normal if reading == "normal" else actual.skeleton
    built, origins = traced(text, reading)
    if built != form or end <= start:
        return 0, len(text)
    return origins[start], origins[end - 1] + 1
