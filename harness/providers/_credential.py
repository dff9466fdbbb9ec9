"""The run's own API key, cut out of whatever a live run keeps (cassettes, traces, reports).

The redactor finds keys by shape or by name; a key with neither (`plainkeyvalue99`) only the
run itself can recognise, because it knows the key. Where a model reply, a tool result or a
final answer quotes it, it becomes `[REDACTED:api_key]`.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["KEY_MASK", "MIN_KEY_CHARS", "cut_key", "cuttable_keys"]

KEY_MASK: Final = "[REDACTED:api_key]"
# A key shorter than this is a placeholder, not a credential (the bundled stub's is "stub"):
# cutting it would mangle ordinary words ("stub" in the model name, in prose), and a cassette
# replay, which knows no key, could never match such a cut again.
MIN_KEY_CHARS: Final = 8


def cuttable_keys(*keys: str) -> list[str]:
    """The keys long enough to be credentials (see MIN_KEY_CHARS)."""
    return [key for key in keys if len(key) >= MIN_KEY_CHARS]


def cut_key(value: Any, keys: list[str]) -> Any:
    """A copy of JSON-like `value` with every `keys` string replaced by KEY_MASK, in keys and
    values alike."""
    if not keys:
        return value
    if isinstance(value, str):
        for key in keys:
            value = value.replace(key, KEY_MASK)
        return value
    if isinstance(value, dict):
        return {cut_key(k, keys): cut_key(v, keys) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [cut_key(item, keys) for item in value]
    return value


def cut_key_at_end(text: str, keys: list[str], end: str, limit: int) -> str:
    """`text` (which ends with `end`, the mark of a cut at `limit` characters) with a key's
    beginning that the cut left just before `end` replaced by KEY_MASK, still within `limit`:
    a key cut in half is no longer the whole key `cut_key` looks for."""
    if not text.endswith(end):
        return text
    body = text[: len(text) - len(end)]
    for key in keys:
        for size in range(min(len(key), len(body)), 0, -1):
            if body.endswith(key[:size]):
                kept = body[: len(body) - size][: max(0, limit - len(KEY_MASK))]
                return kept + KEY_MASK + end
    return text
