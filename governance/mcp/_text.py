"""Server-supplied text made safe to show: bounded, invisible characters gone, no forged prefix.

Proctor's outbound MCP server prefixes each published description with `[proctor: ...]`, its
own governance facts. A description that came from some other server must never be able to
pose as that prefix, so `neutralise_description` defuses one that starts like it. Shared by the
MCP client (inbound tools) and the outbound server.
"""

from __future__ import annotations

import unicodedata

GOVERNANCE_PREFIX = "[proctor"
DESCRIPTION_MAX_CHARS = 1_000
TRUNCATION_MARKER = " ... (cut by proctor)"
_KEPT_CONTROLS = frozenset("\n\t")
_SKELETON_CHARS = 64


def _visible(text: str) -> str:
    """`text` without format characters (zero-width, bidi controls) and control characters."""
    return "".join(
        ch
        for ch in text
        if ch in _KEPT_CONTROLS or unicodedata.category(ch) not in ("Cf", "Cc", "Cs", "Co")
    )


def looks_like_governance_prefix(text: str) -> bool:
    """Whether `text` starts like `[proctor`, read the way a person or model would read it.

    Compared on a skeleton: NFKC-normalised (so a full-width `［` counts), case-folded, with
    whitespace and invisible characters removed (so `[ Proctor` and `[\u200bproctor` count).
    """
    head = unicodedata.normalize("NFKC", _visible(text)[: _SKELETON_CHARS * 2]).casefold()
    skeleton = "".join(ch for ch in head if not ch.isspace())
    return skeleton.startswith(GOVERNANCE_PREFIX)


def neutralise_description(text: str) -> str:
    """A server-supplied description that cannot pass for Proctor's own `[proctor: ...]` prefix.

    The exact rule: format and control characters (except newline and tab) are removed
    everywhere and surrounding whitespace is stripped; then, if the result still starts like
    `[proctor` (see `looks_like_governance_prefix`), its first character - the bracket - is
    replaced with `(`. Anything else is left as it is. The result is never longer than the input.
    """
    body = _visible(text).strip()
    if looks_like_governance_prefix(body):
        body = "(" + body[1:]
    return body


def bound_description(text: str, limit: int = DESCRIPTION_MAX_CHARS) -> str:
    """`text` cut to at most `limit` characters, ending with a visible marker when cut."""
    if limit <= len(TRUNCATION_MARKER):
        raise ValueError(f"limit must be more than {len(TRUNCATION_MARKER)} characters")
    if len(text) <= limit:
        return text
    return text[: limit - len(TRUNCATION_MARKER)].rstrip() + TRUNCATION_MARKER


def safe_description(text: str | None, limit: int = DESCRIPTION_MAX_CHARS) -> str:
    """Neutralised, then bounded: what an inbound MCP tool's descriptor carries."""
    return bound_description(neutralise_description(text or ""), limit)
