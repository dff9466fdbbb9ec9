"""The shortcuts of redaction (skipped passes, remembered verdicts) never change its result.

Each pass is skipped only when it cannot match, and only texts found clean are remembered; the
reference below runs every pass on every text, so a gate that skips a pass that would have
matched makes the two disagree.
"""

from __future__ import annotations

import random
import re
from typing import Any

from governance.screening import _redaction as r
from governance.screening._secret_shapes import (
    ANY_KEYWORD,
    BASIC,
    BEARER,
    KEYWORDS,
    RANDOM_RUN,
    RANDOM_RUN_MIN_CHARS,
    SHAPE_MIN_CHARS,
    SHAPES,
    UNKEYED_SHAPE_MIN_CHARS,
)
from tests.unit.governance.redaction_corpus.presentations import errors, load, texts

_PIECES = [
    "sk-", "token", "password", "Bearer ", "Basic ", "://", "@", "sig=", "=", ": ", "ghp_",
    "AKIA", "eyJ", "--", "api_key", "s.", "xoxb-", "\\n", "SK", "dapi", '"pwd": ', "'secret': '",
    "-----BEGIN RSA PRIVATE KEY-----", "dXNlcjpwYXNz", "\u017fecret", "TOKEN", "Access Key is ",
    "Credentials", "aB3xY9qZ", "?key=", "&code=", "#sig=",
    "https://a1b2c3d4e5f6g7h8i9@", "sha256:", "0f3a9c", "\u212a",
]  # fmt: skip
_ALPHABET = "abcXYZ019 :=\"'-_./@\n\t%\\+"


def _every_pass(text: str) -> str:
    """redact_text with no pass skipped (keyword gates included: they predate the shortcuts)."""
    low = text.lower()
    for kind, pattern, needs_digit in SHAPES:
        keys = KEYWORDS.get(kind)
        if keys is None or any(k in low for k in keys):
            text = pattern.sub(r._mask_shape(kind, needs_digit), text)
    text = r._URL_PASSWORD.sub(r._mask_url_password, text)
    text = r._SAS_SIGNATURE.sub(lambda m: m.group(1) + r._marker("sas_signature"), text)
    text = r._URL_PARAM.sub(r._mask_url_param, text)
    text = r._URL_USER_TOKEN.sub(r._mask_url_user, text)
    text = BEARER.sub(r._mask_bearer, text)
    text = BASIC.sub(r._mask_basic, text)
    text = r._COLON_LINE.sub(r._mask_named(2, 4), text)
    text = r._QUOTED_PAIR.sub(r._mask_named(2, 4), text)
    text = r._ASSIGNMENT.sub(r._mask_named(1, 3), text)
    text = r._CLI_FLAG.sub(r._mask_named(2, 4), text)
    text = r._KEYWORD_VALUE.sub(r._mask_keyword, text)
    return r._mask_random_runs(text)


def _fuzz(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        size = rng.randint(0, 70)
        out.append(
            "".join(
                rng.choice(_PIECES) if rng.random() < 0.2 else rng.choice(_ALPHABET)
                for _ in range(size)
            )
        )
    return out


def _corpus_texts() -> list[str]:
    secrets, lookalikes = load()
    out = [item.text for item in lookalikes]
    for secret in secrets:
        out.extend(text for _, text in texts(secret))
        out.extend(text for _, text in errors(secret))
    return out


def _digests(seed: int, count: int) -> list[str]:
    """Digest-like texts: lower-case hex (clean), and look-alikes in other alphabets."""
    rng = random.Random(seed)
    alphabets = ["0123456789abcdef", "0123456789abcdefABCDEF", "0123456789abcdefghijkXYZ_-"]
    out = []
    for n in range(count):
        alphabet = alphabets[n % len(alphabets)]
        body = "".join(rng.choice(alphabet) * rng.randint(1, 4) for _ in range(64))[:64]
        out.append(rng.choice(["sha256:", "hmac-sha256:", "SHA256:"]) + body)
    return out


def test_skipping_passes_never_changes_what_a_text_becomes() -> None:
    for text in [*_corpus_texts(), *_fuzz(11, 20_000), *_digests(15, 5000)]:
        assert r._redact_text(text) == _every_pass(text), text


def test_a_remembered_verdict_gives_the_same_text_as_the_first_time() -> None:
    for text in [*_corpus_texts()[:3000], *_fuzz(12, 3000)]:
        first = r.redact_text(text)
        assert r.redact_text(text) == first == _every_pass(text), text


def test_a_masked_text_is_never_remembered() -> None:
    secret = "ghp_FakeGitHubToken0123456789abcdefABCD"
    assert r.redact_text(secret) != secret
    assert r.redact_text(secret) != secret
    assert secret not in r._CLEAN
    assert r.redact({"note": f"see {secret}"}) == {"note": "see [REDACTED:github_token]"}


def test_a_string_subclass_is_never_answered_from_memory() -> None:
    class Sly(str):
        """Claims to equal a remembered clean text while holding a secret."""

        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return hash("clean words")

    r.redact_text("clean words")
    assert "clean words" in r._CLEAN
    masked = r.redact_text(Sly("token=ghp_FakeGitHubToken0123456789abcdefABCD"))
    assert "FakeGitHubToken" not in masked
    assert r.is_sensitive_key(Sly("api_key"))


def test_the_memories_stay_bounded() -> None:
    for n in range(r._MEMO_SIZE + 10):
        r.redact_text(f"plain text number {n}")
        r.is_sensitive_key(f"field_{n}")
    assert 0 < len(r._CLEAN) <= r._MEMO_SIZE
    assert 0 < len(r._KEY_VERDICTS) <= r._MEMO_SIZE


def _min_width(pattern: re.Pattern[str]) -> int:
    parser: Any = getattr(re, "_parser")  # noqa: B009 - private, but the width is its fact
    return int(parser.parse(pattern.pattern, pattern.flags).getwidth()[0])


def test_no_shape_matches_fewer_characters_than_its_gate_skips() -> None:
    for kind, pattern, _ in SHAPES:
        assert _min_width(pattern) >= SHAPE_MIN_CHARS, kind
        if kind not in KEYWORDS:
            assert _min_width(pattern) >= UNKEYED_SHAPE_MIN_CHARS, kind
    assert _min_width(RANDOM_RUN) >= RANDOM_RUN_MIN_CHARS


def test_the_keyword_scan_finds_a_text_exactly_when_some_keyword_is_in_it() -> None:
    keywords = {k for keys in KEYWORDS.values() for k in keys}
    samples = [*_fuzz(13, 5000), *keywords, *(k[:-1] for k in keywords)]
    for text in samples:
        low = text.lower()
        assert (ANY_KEYWORD.search(low) is not None) == any(k in low for k in keywords), text


def test_key_verdicts_are_the_same_remembered_or_not() -> None:
    words = ["api", "key", "Token", "secret", "PASS", "pass", "auth", "max", "count", "name"]
    rng = random.Random(14)
    for _ in range(3000):
        name = "".join(rng.choice(words) + rng.choice(["", "_", "-"]) for _ in range(3))
        for variant in (name, name.upper()):
            first = r._is_sensitive_name(variant)
            assert r._is_sensitive_name(variant) == first == r._is_sensitive_env_name(variant)
            assert r.is_sensitive_key(variant) == r._is_sensitive_key(variant)
