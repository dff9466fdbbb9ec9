"""The two readings of a text that injection patterns search, and where their characters came from.

`normal`: NFKC, invisible format characters (zero-width, bidi controls, soft hyphen) removed,
typographic apostrophes made ASCII, case folded, whitespace collapsed. Patterns in scripts other
than Latin (Chinese, Japanese, Russian) read this.

`skeleton`: the same text with every disguise of Latin letters undone: look-alikes from
Unicode's confusables table (Cyrillic `о`, Greek `Ι`, Cherokee, ...) read as the letter they
imitate, accents and other combining marks dropped, letters spelt out one by one (`i g n o r e`,
`i.g.n.o.r.e`, `i  g  n`, `i / g / n`) joined, underscores read as spaces, and the digits and
signs of leetspeak (`1gn0r3`) read as letters.
English and the other Latin-script patterns read this.

Pure. ASCII text is already NFKC and holds no invisible character and no look-alike, so it
skips the per-character walk: its skeleton costs a lower(), a translate() and two scans.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from governance.screening._confusables import LATIN_LOOKALIKES

# Invisible but not category Cf: combining grapheme joiner, Mongolian vowel separator, Hangul
# fillers.
INVISIBLE = frozenset("\u034f\u180e\u115f\u1160\u3164\uffa0")
APOSTROPHES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u02bc": "'", "\u2032": "'"})
WHITESPACE = re.compile(r"\s+")
# A separator between spelt-out letters: a run of spaces (`i  g  n`), or one sign with spaces
# either side or none (`i.g.n`, `i . g . n`, `i,g,n`, `i/g/n`, `i-g-n`, `i*g*n`).
_SEP = r"(?:[ \t]+|[ \t]*[.,/*-][ \t]*)"
# Two or more single letters, each followed by the same separator, spaces included: a run of
# letters spelt with single spaces ends where a double space parts two words
# (`i g n o r e  a l l` -> `ignore all`).
SPELT = re.compile(rf"\b[a-z]({_SEP})(?:[a-z]\1)*[a-z]\b")
# Where a spelt-out run may be: only then is SPELT run (it starts on a separator, so the scan
# skips most of the text).
# One character class first, so the scan is a fast skip (an alternation there costs ~0.2 µs a
# character, and a run of spaces would be searched over and over).
SPELT_HINT = re.compile(r"[ \t.,/*-][a-z][ \t]*[ \t.,/*-][ \t]*[a-z](?![a-z])")
# Leetspeak: the digits and signs that stand for letters. Read everywhere in the skeleton (a
# digit in `ORD-0001` becoming a letter matches no pattern), which costs one translate.
# An underscore reads as a space (`ignore_all_previous_instructions`).
LEET = str.maketrans("013457@$_", "oieastas ")


@dataclass(frozen=True, slots=True)
class Readings:
    """`normal` is None for ASCII text: only non-Latin patterns read it, and they cannot match."""

    normal: str | None
    skeleton: str


def is_invisible(ch: str) -> bool:
    return ch in INVISIBLE or unicodedata.category(ch) == "Cf"


def _clean(text: str) -> str:
    """NFKC with invisible characters removed (case kept: look-alikes are case-specific)."""
    if text.isascii():
        return text
    nfkc = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in nfkc if not is_invisible(ch)).translate(APOSTROPHES)


def normalise(text: str) -> str:
    """The `normal` reading (also of ASCII text)."""
    return WHITESPACE.sub(" ", _clean(text).casefold())


def join_spelt(text: str) -> str:
    """Letters spelt one by one joined (`i g n o r e` -> `ignore`), when there may be any."""
    if SPELT_HINT.search(text) is None:
        return text
    return SPELT.sub(lambda m: m.group(0).replace(m.group(1), ""), text)


def latin(clean: str) -> str:
    """Marks dropped, look-alikes read as Latin letters, case folded."""
    stripped = "".join(
        ch for ch in unicodedata.normalize("NFD", clean) if unicodedata.category(ch) != "Mn"
    )
    return unicodedata.normalize("NFC", stripped).translate(LATIN_LOOKALIKES).casefold()


def readings(text: str) -> Readings:
    if text.isascii():
        return Readings(None, WHITESPACE.sub(" ", join_spelt(text.lower().translate(LEET))))
    clean = _clean(text)
    normal = WHITESPACE.sub(" ", clean.casefold())
    return Readings(normal, WHITESPACE.sub(" ", join_spelt(latin(clean).translate(LEET))))


def skeleton(text: str) -> str:
    """The `skeleton` reading."""
    return readings(text).skeleton
