"""A `regex:` condition reads a value two ways when either is not plain ASCII: as written
(Unicode case-folding and classes) and with ASCII semantics. Where they disagree (a lookalike of
an ASCII letter, another script's digit) the value cannot be judged: no allow rule passes it,
every block rule holds on it. ASCII values keep their one reading (and its speed)."""

from __future__ import annotations

from typing import Any

import pytest

from governance import PolicyContext, Principal, RunUsage, ToolCall, ToolDescriptor
from governance.policy._compile import compile_policy
from governance.policy._eval import evaluate
from governance.policy._model import PolicyModel

CONTACT = r"(?i)sarah\.baker@gmail\.com"


def _decide(rules: list[dict[str, Any]], value: str) -> str:
    policy = compile_policy(PolicyModel.model_validate({"version": 1, "rules": rules}))
    descriptor = ToolDescriptor(
        name="mail.send",
        description="send",
        input_schema={"type": "object"},
        source="local",
        action_type="external",
        risk="high",
        reversible=False,
        external_side_effect=True,
        idempotent=False,
    )
    call = ToolCall("c1", "mail.send", {"to": value}, "run-1", Principal("ann", "bot", "ops"))
    context = PolicyContext.for_call(
        call, descriptor, registry_digest="sha256:r", usage=RunUsage(tokens_used=0)
    )
    return evaluate(context, policy).effect


def allow_only(pattern: str) -> list[dict[str, Any]]:
    return [{"id": "ok", "effect": "allow", "match": {}, "when": [{"arg": "to", "regex": pattern}]}]


def block_matching(pattern: str, *, negate: bool = False) -> list[dict[str, Any]]:
    guard = {"arg": "to", "regex": pattern, "negate": negate}
    return [
        {"id": "base", "effect": "allow", "match": {}},
        {"id": "guard", "effect": "block", "match": {}, "when": [guard]},
    ]


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
    assert _decide(allow_only(CONTACT), value) == effect


@pytest.mark.parametrize(
    ("value", "effect"),
    [
        ("sarah.baker@gmail.com", "allow"),
        ("sarah.baker@gma\u0130l.com", "block"),
        ("bob@evil.test", "block"),
    ],
)
def test_a_block_on_strangers_holds_on_a_lookalike(value: str, effect: str) -> None:
    assert _decide(block_matching(CONTACT, negate=True), value) == effect


def test_a_block_on_a_word_holds_on_its_unicode_lookalike_too() -> None:
    rules = block_matching(r"(?i).*secret.*")
    assert _decide(rules, "the \u017fecret plan") == "block"  # ſ folds to s: one reading matches
    assert _decide(rules, "the secret plan") == "block"
    assert _decide(rules, "the plan") == "allow"


def test_other_scripts_digits_are_not_digits_to_an_allow_rule() -> None:
    rules = allow_only(r"\d{4}")
    assert _decide(rules, "2024") == "allow"
    assert _decide(rules, "\u0662\u0660\u0662\u0664") == "block"  # Arabic-Indic 2024
