"""Builds governance/screening/_confusables.py from Unicode's confusables.txt.

The data comes from the `confusable-homoglyphs` package (MIT; a dev dependency), which ships
Unicode's security file confusables.txt as JSON. Only what the screener needs is kept: single
characters that look like an ASCII letter, mapped to that letter (case kept, so a Greek capital
nu reads as N, not as v), minus what NFKC already folds.

Regenerate: .venv/bin/python -m tests.unit.governance.screening.confusables_source
"""

from __future__ import annotations

import json
import string
import unicodedata
from importlib import metadata, resources
from pathlib import Path

TARGET = Path(__file__).resolve().parents[4] / "governance" / "screening" / "_confusables.py"


def build_table() -> dict[str, str]:
    raw = resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8")
    data: dict[str, list[dict[str, str]]] = json.loads(raw)
    candidates: dict[str, list[str]] = {}
    for letter in string.ascii_letters:
        for entry in data.get(letter, []):
            char = entry["c"]
            if len(char) != 1 or char.isascii() or unicodedata.normalize("NFKC", char) != char:
                continue
            candidates.setdefault(char, []).append(letter)
    # confusables.txt files capital I under `l` (one prototype for both), so a capital that
    # looks like `l` (Greek capital iota) is an I here. A character listed under several
    # letters reads as the one of its own case, then the first in the alphabet.
    for char, letters in candidates.items():
        if char.isupper() and "l" in letters:
            letters.append("I")
    return {
        char: min(letters, key=lambda letter: (letter.isupper() != char.isupper(), letter))
        for char, letters in sorted(candidates.items())
    }


def render(table: dict[str, str]) -> str:
    version = metadata.version("confusable-homoglyphs")
    rows = "\n".join(f"    {hex(ord(c))}: {letter!r},  # {unicodedata.name(c, '?')}"
                     for c, letter in table.items())
    return (
        '"""Characters that look like an ASCII letter, and that letter: generated, do not edit.\n\n'
        "Source: Unicode's confusables.txt (Unicode Security Mechanisms, UTS #39) as shipped in\n"
        f"confusable-homoglyphs {version} (MIT). Regenerate with\n"
        "`.venv/bin/python -m tests.unit.governance.screening.confusables_source`; a test fails\n"
        "when this file and the source disagree.\n"
        '"""\n\n'
        "from typing import Final\n\n"
        f"LATIN_LOOKALIKES: Final[dict[int, str]] = {{\n{rows}\n}}\n"
    )


if __name__ == "__main__":
    TARGET.write_text(render(build_table()), encoding="utf-8")
    print(f"wrote {TARGET}")
