"""Redaction runs on every audit append, so hostile text must not make it backtrack for minutes."""

from __future__ import annotations

import time

import pytest

from governance._redaction import redact

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
}


@pytest.mark.parametrize("text", PATHOLOGICAL.values(), ids=PATHOLOGICAL.keys())
def test_redaction_of_hostile_text_stays_linear(text: str) -> None:
    started = time.perf_counter()
    redact({"output": text})
    assert time.perf_counter() - started < 2.0
