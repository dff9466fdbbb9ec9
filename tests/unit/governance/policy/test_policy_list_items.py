"""Conditions judged value by value (`items: all | any`): a recipients or participants list
item by item, a single value as itself, null as no value; what cannot be judged fails closed."""

from __future__ import annotations

from typing import Any

import pytest

from governance import PolicyContext, PolicyError, Principal, RunUsage, ToolCall, ToolDescriptor
from governance.policy import parse_policy
from governance.policy._compile import compile_policy
from governance.policy._eval import evaluate
from governance.policy._model import PolicyModel

OURS = r"[^@\s]+@example\.com"


def _decide(when: dict[str, Any], effect: str, arguments: dict[str, Any]) -> str:
    rules: list[dict[str, Any]] = [{"id": "base", "effect": "allow", "match": {}}]
    if effect == "allow":
        rules = [{"id": "guarded", "effect": "allow", "match": {}, "when": [when]}]
    else:
        rules.append({"id": "guard", "effect": effect, "match": {}, "when": [when]})
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
    call = ToolCall("c1", "mail.send", arguments, "run-1", Principal("ann", "bot", "ops"))
    context = PolicyContext.for_call(
        call, descriptor, registry_digest="sha256:r", usage=RunUsage(tokens_used=0)
    )
    return evaluate(context, policy).effect


@pytest.mark.parametrize(
    ("value", "effect"),
    [
        (["a@example.com", "b@example.com"], "allow"),
        (["a@example.com", "mallory@evil.test"], "block"),
        ([], "allow"),
        (None, "allow"),  # an optional list sent as null holds nothing
        ("a@example.com", "allow"),  # a single value is judged as itself
        ("mallory@evil.test", "block"),
        ([["a@example.com"]], "block"),  # an item that is itself a list cannot be judged
    ],
)
def test_an_allow_with_all_items_passes_only_when_every_item_passes(
    value: object, effect: str
) -> None:
    when = {"arg": "to", "regex": OURS, "items": "all"}

    assert _decide(when, "allow", {"to": value}) == effect


@pytest.mark.parametrize(
    ("value", "effect"),
    [
        (["a@example.com"], "allow"),
        (["a@example.com", "mallory@evil.test"], "block"),
        (["a@example.com", 7], "block"),  # an item that cannot be judged counts against it
        ("mallory@evil.test", "block"),  # a single value is judged as itself
        ("a@example.com", "allow"),
        ({"to": "a@example.com"}, "block"),  # cannot be judged: a restrictive rule holds
        ([], "allow"),
        (None, "allow"),  # an optional argument left out (filled in as null): nothing to block
    ],
)
def test_a_block_on_any_item_outside_the_list_stops_the_call(value: object, effect: str) -> None:
    when = {"arg": "to", "regex": OURS, "negate": True, "items": "any"}

    assert _decide(when, "block", {"to": value}) == effect


def test_a_block_on_items_of_an_absent_argument_does_not_apply() -> None:
    when = {"arg": "cc", "regex": OURS, "negate": True, "items": "any"}

    assert _decide(when, "block", {"to": ["mallory@evil.test"]}) == "allow"


def test_without_items_a_list_argument_still_fails_a_string_check() -> None:
    assert _decide({"arg": "to", "regex": OURS}, "allow", {"to": ["a@example.com"]}) == "block"


def test_explain_names_the_item_mode() -> None:
    policy = compile_policy(
        PolicyModel.model_validate(
            {
                "version": 1,
                "rules": [
                    {
                        "id": "r",
                        "effect": "block",
                        "match": {},
                        "when": [{"arg": "to", "enum": ["x"], "negate": True, "items": "any"}],
                    }
                ],
            }
        )
    )

    assert policy.rules[0].when[0].describe() == "any items of to: NOT(in ['x'])"


def test_a_policy_file_refuses_an_unknown_item_mode() -> None:
    text = (
        "version: 1\nrules:\n  - id: r\n    effect: allow\n    match: {}\n    when:\n"
        "      - arg: to\n        enum: [x]\n        items: some\n"
    )

    with pytest.raises(PolicyError) as caught:
        parse_policy(text, "p.yaml")

    assert "p.yaml:9" in str(caught.value)
    assert "items" in str(caught.value)
