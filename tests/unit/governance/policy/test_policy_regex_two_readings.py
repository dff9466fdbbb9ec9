"""A `regex:` condition reads a value two ways when either is not plain ASCII: as written
(Unicode case-folding and classes) and with ASCII semantics. Where they disagree (a lookalike of
an ASCII letter, another script's digit) the value cannot be judged: no allow rule passes it,
every block rule holds on it. ASCII values keep their one reading (and its speed)."""

from __future__ import annotations

import pytest

from tests.unit.governance.policy.test_policy_list_items import _decide

CONTACT = r"(?i)sarah\.baker@gmail\.com"


@pytest.mark.parametrize(
    ("value", "effect"),
    [
        ("sarah.baker@gmail.com", "allow"),
        ("SARAH.Baker@GMAIL.com", "allow"),  # ASCII case-insensitivity is kept
        ("sarah.baker@gma\u0130l.com", "block"),  # İ: xn--gmail-bgd.com, someone else's
        ("sarah.ba\u212aer@gmail.com", "block"),  # the Kelvin sign
        ("sarah.baker@evil.test", "block"),
    ],
)
def test_an_allow_list_regex_passes_no_lookalike(value: str, effect: str) -> None:
    assert _decide({"arg": "to", "regex": CONTACT}, "allow", {"to": value}) == effect


@pytest.mark.parametrize(
    ("value", "effect"),
    [
        ("sarah.baker@gmail.com", "allow"),
        ("sarah.baker@gma\u0130l.com", "block"),
        ("bob@evil.test", "block"),
    ],
)
def test_a_block_on_strangers_holds_on_a_lookalike(value: str, effect: str) -> None:
    stranger = {"arg": "to", "regex": CONTACT, "negate": True}
    assert _decide(stranger, "block", {"to": value}) == effect


def test_a_block_on_a_word_holds_on_its_unicode_lookalike_too() -> None:
    word = {"arg": "to", "regex": r"(?i).*secret.*"}
    assert _decide(word, "block", {"to": "the \u017fecret plan"}) == "block"  # ſ folds to s
    assert _decide(word, "block", {"to": "the secret plan"}) == "block"
    assert _decide(word, "block", {"to": "the plan"}) == "allow"


def test_other_scripts_digits_are_not_digits_to_an_allow_rule() -> None:
    digits = {"arg": "to", "regex": r"\d{4}"}
    assert _decide(digits, "allow", {"to": "2024"}) == "allow"
    assert _decide(digits, "allow", {"to": "\u0662\u0660\u0662\u0664"}) == "block"  # ٢٠٢٤
