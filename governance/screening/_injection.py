"""Guardrails: screen the request and every tool output for injection-shaped text.

A screener is anything with `screen(text) -> tuple[Finding, ...]` (the `Screener` protocol);
the default is `HeuristicScreener`, patterns over two readings of the text (`_normalise`: NFKC,
invisible characters removed, look-alikes and leetspeak read as Latin letters). A flagged
request is rejected before any model call; a flagged tool output does not stop the run: it marks
the run tainted, a structured fact the policy can act on (`match: {tainted: true}`), never text
the policy reads.

The heuristic is measured on tests/data/screening (benchmarks/screening_quality.py): it catches
known phrasings and disguises in eight languages and misses free paraphrase. To use another
classifier, pass `screener=` to `Firewall` and `AgentLoop` (see `Screener`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from governance.core._contracts import ToolResult
from governance.screening._json_text import json_document, json_scalars
from governance.screening._normalise import Readings, readings
from governance.screening._patterns import INJECTION_PATTERNS
from governance.screening._quotes import locate
from governance.screening._secret_shapes import any_of

Verdict = Literal["pass", "flagged", "rejected"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One injection-shaped passage: its kind (`ignore_instructions`, ...) and where it is in
    the text as written (`start`/`end` offsets; `quote` is `text[start:end]`)."""

    name: str
    start: int
    end: int
    quote: str


@runtime_checkable
class Screener(Protocol):
    """Decides whether a text holds injected instructions.

    `screen` returns one Finding per injection-shaped passage, () for a clean text. It must be
    pure and deterministic (the same text, the same findings: traces are byte-identical), must
    not keep or send the text anywhere, and may raise: the caller then treats the text as
    flagged (`screening_error`), never as clean.
    """

    def screen(self, text: str) -> tuple[Finding, ...]: ...


# Every needle of every pattern, per reading, as one pattern: a text holding none of them
# matches no pattern (most tool outputs), which one scan settles.
_GATE = {
    reading: any_of({n for _, r, _, needles in INJECTION_PATTERNS if r == reading for n in needles})
    for reading in ("normal", "skeleton")
}


def _matches(forms: Readings) -> list[tuple[str, str, int, int]]:
    """(finding, reading, start, end) of the first match of each pattern that matches."""
    texts = {"skeleton": forms.skeleton}
    if forms.normal is not None:
        texts["normal"] = forms.normal
    gated = {r: t for r, t in texts.items() if _GATE[r].search(t) is not None}
    if not gated:
        return []
    found: list[tuple[str, str, int, int]] = []
    for name, reading, pattern, needles in INJECTION_PATTERNS:
        text = gated.get(reading)
        if text is None or not any(n in text for n in needles):
            continue
        if (match := pattern.search(text)) is not None:
            found.append((name, reading, match.start(), match.end()))
    return found


class HeuristicScreener:
    """The default screener: patterns over the normal and skeleton readings of the text."""

    def screen(self, text: str) -> tuple[Finding, ...]:
        found: dict[str, Finding] = {}
        for name, reading, start, end in _matches(readings(text)):
            if name not in found:
                begin, stop = locate(text, reading, start, end)
                found[name] = Finding(name, begin, stop, text[begin:stop])
        return tuple(found.values())

    def kinds(self, text: str) -> tuple[str, ...]:
        """The names `screen` would find, without locating their quotes (the call path keeps
        only the names; locating a quote maps the reading back to the text character by
        character, ~1.7 ms for a flagged kilobyte)."""
        return tuple(dict.fromkeys(name for name, _, _, _ in _matches(readings(text))))


DEFAULT_SCREENER: Screener = HeuristicScreener()


def findings(text: str, screener: Screener | None = None) -> tuple[str, ...]:
    """The kinds of injection-shaped text in `text` (empty when clean). A screener that raises
    is a finding (`screening_error`): fail closed."""
    active = screener if screener is not None else DEFAULT_SCREENER
    try:
        if type(active) is HeuristicScreener:  # exactly ours: a subclass may override screen
            return active.kinds(text)
        return tuple(dict.fromkeys(f.name for f in active.screen(text)))
    except Exception:
        return ("screening_error",)


@dataclass(frozen=True, slots=True)
class Screening:
    verdict: Verdict
    findings: tuple[str, ...]


def screen_request(text: str, screener: Screener | None = None) -> Screening:
    """The user's request: injection-shaped instructions are rejected before any model call."""
    found = findings(text, screener)
    return Screening("rejected" if found else "pass", found)


# The finding a tool's output gets for where it came from (its descriptor's `untrusted_output`),
# not for what it says: a third party wrote it, so the run that reads it is tainted.
UNTRUSTED_SOURCE = "untrusted_source"


def untrusted_text(result: ToolResult) -> str:
    """What a tool (local or MCP) wrote that the model will read: its output, or the error
    text of a failed call. Refusals (blocked, held) are governance's own words."""
    if result.outcome == "executed":
        return result.output
    if result.outcome == "failed":
        return result.error or ""
    return ""


def output_findings(result: ToolResult, screener: Screener | None = None) -> tuple[str, ...]:
    r"""The injection kinds in what a tool wrote, read as the model will read it.

    A tool's output is often JSON: its text hides a line break as the two characters `\n`
    (so "...delivery.\nIgnore previous instructions" has no word boundary before "Ignore") and
    can spell any letter as a `\u` escape. Such output is screened twice, as written and as its
    decoded strings, and the findings of both count: a reading can only add findings."""
    text = untrusted_text(result)
    found = findings(text, screener)
    decoded = _decoded_strings(text)
    if decoded is None:
        return found
    return tuple(dict.fromkeys((*found, *findings(decoded, screener))))


def _decoded_strings(text: str) -> str | None:
    """Every member name and scalar of `text` read as JSON, one per line (a pattern never spans
    two values); None when `text` is not a JSON document."""
    parsed, document = json_document(text)
    if not parsed:
        return None
    found = json_scalars(document)
    return "\n".join(found) if found else None


def screen_tool_output(text: str, screener: Screener | None = None) -> Screening:
    """A tool's output is data: injection-shaped text is flagged (the run becomes tainted)."""
    found = findings(text, screener)
    return Screening("flagged" if found else "pass", found)
