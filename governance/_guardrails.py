"""Guardrails: screen the request and every tool output for injection-shaped text.

Pure functions over normalised text (NFKC, zero-width characters removed, case folded,
whitespace collapsed), so look-alike and invisible-character tricks match like plain text.
A flagged tool output does not stop the run: it marks the run tainted, a structured fact the
policy can act on (`match: {tainted: true}`), never text the policy reads.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["pass", "flagged", "rejected"]

_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e"))

INJECTION_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern))
    for name, pattern in (
        (
            "ignore_instructions",
            r"\b(ignore|disregard|forget|override)\b[^.\n]{0,40}\b(previous|prior|above|earlier|"
            r"all|your|the)\b[^.\n]{0,20}\b(instructions?|rules|prompts?|guidelines)\b",
        ),
        ("role_override", r"\byou are now\b|\bact as (an? )?(admin|root|system|developer)\b"),
        ("system_prompt", r"\b(system prompt|developer message|hidden instructions?)\b"),
        ("new_instructions", r"\bnew instructions?\s*:"),
        ("tool_call_markup", r"<\s*/?\s*(tool_call|function_call|tool_use)\b"),
        (
            "exfiltration",
            r"\b(send|email|e-mail|post|upload|forward|exfiltrate)\b[^\n]{0,60}\b(passwords?|"
            r"secrets?|api[ _-]?keys?|credentials?|tokens?)\b",
        ),
    )
)


@dataclass(frozen=True, slots=True)
class Screening:
    verdict: Verdict
    findings: tuple[str, ...]


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH)
    return re.sub(r"\s+", " ", text.casefold())


def findings(text: str) -> tuple[str, ...]:
    clean = normalise(text)
    return tuple(name for name, pattern in INJECTION_PATTERNS if pattern.search(clean))


def screen_request(text: str) -> Screening:
    """The user's request: injection-shaped instructions are rejected before any model call."""
    found = findings(text)
    return Screening("rejected" if found else "pass", found)


def screen_tool_output(text: str) -> Screening:
    """A tool's output is data: injection-shaped text is flagged (the run becomes tainted)."""
    found = findings(text)
    return Screening("flagged" if found else "pass", found)
