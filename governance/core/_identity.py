"""Who is who: principal names are compared by a skeleton, so a look-alike is the same person.

The self-approval check and the two-person budget reset both ask "are these two names one
person?". Comparing the strings lets `alice\u200b`, full-width `ａlice` or Cyrillic `alіce`
pass for someone else. The skeleton follows Unicode TR39: NFKC, case folding, invisible and
whitespace characters removed, then every character mapped to its confusable prototype (a table
generated from Unicode's confusables.txt, see tests/tools/generate_confusables.py), repeated to a
fixed point. Pure: no I/O beyond reading the packaged table once.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable
from functools import cache, lru_cache
from importlib import resources
from typing import Final

# Default_Ignorable_Code_Point characters that are not category Cf (those are dropped by category).
_IGNORABLE: Final = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180e\u180f\u3164\uffa0"
    + "".join(chr(c) for c in range(0xFE00, 0xFE10))
    + "".join(chr(c) for c in range(0xE0100, 0xE01F0))
)
_INVISIBLE_CATEGORIES: Final = frozenset({"Cf", "Cc", "Co", "Cs", "Cn", "Zl", "Zp"})


@cache
def _confusables() -> dict[str, str]:
    text = resources.files("governance").joinpath("data/confusables.json").read_text("utf-8")
    table: dict[str, str] = json.loads(text)["map"]
    return table


def _invisible(ch: str) -> bool:
    return ch in _IGNORABLE or unicodedata.category(ch) in _INVISIBLE_CATEGORIES


def _fold(text: str) -> str:
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return "".join(ch for ch in folded if not (_invisible(ch) or ch.isspace()))


@lru_cache(maxsize=4096)  # budgets key every charged call by it: the same few names
def skeleton(name: str) -> str:
    """The form two names are compared in: equal skeletons mean one person."""
    table = _confusables()
    current = _fold(name)
    for _ in range(8):  # the table is closed, so this settles in one or two rounds
        mapped = "".join(table.get(ch, ch) for ch in unicodedata.normalize("NFD", current))
        following = _fold(mapped)
        if following == current:
            break
        current = following
    return current


def same_person(a: str, b: str) -> bool:
    """Whether two names denote one person (they look alike once normalised)."""
    return skeleton(a) == skeleton(b)


def _spelling(name: str) -> str:
    # Case and surrounding spaces are not a different spelling: "Ann" and " ann" are one name.
    return unicodedata.normalize("NFC", name).strip().casefold()


def name_problem(name: str) -> str | None:
    """Why `name` cannot be used as a principal name, or None.

    Invisible characters (zero-width, bidi controls, control characters) are refused outright:
    a name a reviewer types never needs them, and a name that hides them is a disguise.
    """
    hidden = sorted({f"U+{ord(ch):04X}" for ch in name if _invisible(ch)})
    if hidden:
        listed = ", ".join(hidden)
        return f"{ascii(name)} contains invisible characters ({listed}); type the name plainly"
    if not skeleton(name):
        return f"{ascii(name)} has no visible characters"
    return None


def look_alike(name: str, known: Iterable[str]) -> str | None:
    """A known name that `name` looks like but is spelled differently, or None.

    `alіce` (Cyrillic i) next to an existing `alice` is either the same person or an impostor;
    either way it must not be accepted as a different one.
    """
    target, spelling = skeleton(name), _spelling(name)
    for other in known:
        if skeleton(other) == target and _spelling(other) != spelling:
            return other
    return None
