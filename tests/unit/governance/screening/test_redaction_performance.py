"""Redaction runs on every audit append, so hostile text must not make it backtrack for minutes."""

from __future__ import annotations

import time

import pytest

from governance.screening._redaction import redact

N = 20_000

# Each of these took quadratic time in an earlier draft (minutes at 100 KB).
PATHOLOGICAL = {
    "dash-words": "-a" * N,
    "word-dashes": "a-" * N,
    "dotted": "a." * N,
    "colon-then-spaces": "x: a" + " " * N + "b",
    "assignments": "A=B " * N,
    "flags": "--a b " * N,
    "scheme-like": "a+" * N + ":/",
    "quoted-keys": '"a":' * N,
    "yaml-lines": "a: b\n" * N,
    "pem-without-end": "-----BEGIN " + "A " * N,
    # Shapes, keyword and random-run rules added for the coverage corpus.
    "openai-prefixes": "sk-" * N,
    "github-prefixes": "ghp_" * N,
    "glued-prefixes": "id-ghp_a" * N,
    "telegram-like": "1234567:AA" * N,
    "discord-like": ("M" + "a" * 24 + ".") * N,
    "webhook-paths": "hooks.slack.com/services/" * N,
    "public-pem-headers": "-----BEGIN PUBLIC KEY-----\n" * N,
    "public-pem-unclosed-end": "-----BEGIN CERTIFICATE-----" + "-----END " * N,
    "one-long-random-run": "aB3xY9" * N,
    "random-run-slashes": "aB3/" * N,
    "random-run-dashes": "NODE_fce680ab-" * N,
    "keyword-joiners": "token is " * N,
    "password-keyword-spaces": "password" + " " * N + "x",
    "bearer-words": "Bearer " * N,
    "basic-base64": "Basic " + "QUFB" * N,
    "jwt-like": "eyJ" * N,
    "prose-after-secret-name": "Token: " + "a " * N,
    "vault-legacy": "s." * N,
    "url-schemes": "ab://" * N,
    "url-user-no-at": "a://" + "u" * N + ":" + "p" * N,
    "keyword-initials": "s-p-a-c-t-" * N,
    "keywords-without-values": "secret key api key credentials " * (N // 8),
    "escaped-breaks": "\\nA=" * N,
}


@pytest.mark.parametrize("text", PATHOLOGICAL.values(), ids=PATHOLOGICAL.keys())
def test_redaction_of_hostile_text_stays_linear(text: str) -> None:
    started = time.perf_counter()
    redact({"output": text})
    assert time.perf_counter() - started < 2.0
