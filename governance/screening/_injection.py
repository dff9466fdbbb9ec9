"""Guardrails: screen the request and every tool output for injection-shaped text.

Pure functions over normalised text (NFKC, every invisible format character removed, case
folded, whitespace collapsed), read twice: as written (so translated patterns match) and as a
Latin skeleton with Cyrillic and Greek look-alikes folded (`іgnоrе` reads as `ignore`).
A flagged tool output does not stop the run: it marks the run tainted, a structured fact the
policy can act on (`match: {tainted: true}`), never text the policy reads.

This is a heuristic: measured on tests/unit/governance/data/request_screening.yaml (see
test_request_screening_rates.py), it catches most known disguises and misses free paraphrase.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from governance.core._contracts import ToolResult

Verdict = Literal["pass", "flagged", "rejected"]

# Invisible but not category Cf: the combining grapheme joiner and the Mongolian vowel separator.
_INVISIBLE = frozenset("\u034f\u180e\u115f\u1160\u3164\uffa0")
# Cyrillic and Greek letters that render like Latin ones (lower case: matched after casefold).
_CONFUSABLES = str.maketrans(
    {
        "\u0430": "a", "\u0435": "e", "\u043e": "o", "\u0440": "p", "\u0441": "c",
        "\u0443": "y", "\u0445": "x", "\u0456": "i", "\u0458": "j", "\u0455": "s",
        "\u0501": "d", "\u04bb": "h", "\u04cf": "l", "\u0475": "v", "\u0261": "g",
        "\u03bf": "o", "\u03b1": "a", "\u03b5": "e", "\u03b9": "i", "\u03ba": "k",
        "\u03bd": "v", "\u03c1": "p", "\u03c4": "t", "\u03c5": "u", "\u03c7": "x",
    }
)  # fmt: skip

_IGNORE = r"(ignore|disregard|forget|override|drop|set aside|pay no attention to|stop following)"
_PRIOR = r"(previous|prior|above|earlier|before|all|your|the|original)"
_RULES = r"(instructions?|rules|prompts?|guidelines|guidance|directives|restrictions)"
_IGNORE_WORDS: tuple[str, ...] = ("ignore", "disregard", "forget", "override", "drop")
_IGNORE_WORDS += ("set aside", "pay no attention to", "stop following")

# (finding, pattern, needles): every match of the pattern contains one of its needles, so a
# text holding none of them is not searched (plain substring tests cost ~50 ns, a search of
# these patterns several µs per 100 characters). tests/unit/governance/screening holds each
# needle set to its pattern over the corpus and fuzzed texts.
INJECTION_PATTERNS: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (name, re.compile(pattern), needles)
    for name, pattern, needles in (
        (
            "ignore_instructions",
            rf"\b{_IGNORE}\b[^.\n]{{0,40}}\b{_PRIOR}\b[^.\n]{{0,20}}\b{_RULES}\b"
            rf"|\b(forget|ignore|disregard) (everything|anything) (above|before|you were told)\b"
            rf"|\b{_PRIOR} {_RULES}\b[^.\n]{{0,40}}\b(no longer apply|are cancell?ed|are void)\b",
            (*_IGNORE_WORDS, "no longer apply", "are cancel", "are void"),
        ),
        (
            "role_override",
            r"\byou are now (an? |the |in )?(\w+ ){0,2}(admin\w*|root|system|developer|dan|"
            r"unrestricted|jailbroken)\b|\bact as (an? )?(admin|root|system|developer)\b"
            r"|\bfrom now on,? you (are (dan|unrestricted|jailbroken)|obey)\b"
            r"|\bpretend (that )?you have no (restrictions|rules|policy|limits)\b",
            ("you are now", "act as", "from now on", "pretend"),
        ),
        (
            "system_prompt",
            r"\b(system prompt|developer message|hidden instructions?)\b",
            ("system prompt", "developer message", "hidden instruction"),
        ),
        ("new_instructions", r"\bnew instructions?\s*:", ("new instruction",)),
        ("tool_call_markup", r"<\s*/?\s*(tool_call|function_call|tool_use)\b", ("<",)),
        (
            "exfiltration",
            r"\b(send|email|e-mail|post|upload|forward|exfiltrate)\b[^\n]{0,60}\b(passwords?|"
            r"secrets?|api[ _-]?keys?|credentials?|tokens?)\b",
            ("password", "secret", "api", "credential", "token"),
        ),
        (
            # "ignore the previous instructions" in the languages most often used to slip past
            # an English-only filter; the words must come together, so a request that only
            # mentions instructions does not match. Same finding, whatever the language.
            "ignore_instructions",
            r"\b(ignor\w*|negeer|zignoruj|игнорируй\w*|проигнорируй\w*)\b[^.\n]{0,40}"
            r"(instruc\w*|instru\w*|anweisung\w*|istruzion\w*|instrukc\w*|инструкц\w*|"
            r"règles|reglas|regeln|regole)"
            r"|(忽略|无视|無視)[^。\n]{0,12}(指令|指示|说明)|(指令|指示)[^。\n]{0,12}(無視|忽略)",
            ("ignor", "negeer", "zignoruj", "игнорируй", "忽略", "无视", "無視", "指令", "指示"),
        ),
    )
)


@dataclass(frozen=True, slots=True)
class Screening:
    verdict: Verdict
    findings: tuple[str, ...]


_WHITESPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """NFKC, invisible characters removed, case folded, whitespace collapsed."""
    # ASCII is already NFKC and holds no format (Cf) or invisible character: skip the
    # per-character walk, the costly part of screening a tool's output.
    if not text.isascii():
        text = "".join(
            ch
            for ch in unicodedata.normalize("NFKC", text)
            if ch not in _INVISIBLE and unicodedata.category(ch) != "Cf"
        )
    return _WHITESPACE.sub(" ", text.casefold())


def skeleton(text: str) -> str:
    """`normalise(text)` with Cyrillic and Greek look-alikes folded to Latin letters."""
    return normalise(text).translate(_CONFUSABLES)


# Every needle of every pattern: a text holding none of them matches no pattern (most tool
# outputs), which one pass of substring tests settles.
_ALL_NEEDLES: tuple[str, ...] = tuple(
    sorted({needle for _, _, needles in INJECTION_PATTERNS for needle in needles})
)


def findings(text: str) -> tuple[str, ...]:
    normal = normalise(text)
    # skeleton(text), without normalising twice; every look-alike is non-ASCII, so for ASCII
    # text both readings are one, searched once.
    folded = normal if normal.isascii() else normal.translate(_CONFUSABLES)
    forms = (normal,) if folded == normal else (normal, folded)
    if not any(needle in form for form in forms for needle in _ALL_NEEDLES):
        return ()
    found = (
        name
        for name, pattern, needles in INJECTION_PATTERNS
        if any(any(n in f for n in needles) and pattern.search(f) for f in forms)
    )
    return tuple(dict.fromkeys(found))


def screen_request(text: str) -> Screening:
    """The user's request: injection-shaped instructions are rejected before any model call."""
    found = findings(text)
    return Screening("rejected" if found else "pass", found)


def untrusted_text(result: ToolResult) -> str:
    """What a tool (local or MCP) wrote that the model will read: its output, or the error
    text of a failed call. Refusals (blocked, held) are governance's own words."""
    if result.outcome == "executed":
        return result.output
    if result.outcome == "failed":
        return result.error or ""
    return ""


def screen_tool_output(text: str) -> Screening:
    """A tool's output is data: injection-shaped text is flagged (the run becomes tainted)."""
    found = findings(text)
    return Screening("flagged" if found else "pass", found)
