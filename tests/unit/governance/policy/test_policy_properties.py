"""Properties of evaluation over random policies and calls: order never matters, never unsafe."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from governance import PolicyContext
from governance.core._contracts import ACTION_TYPES, EFFECTS, IMPACTS, RISKS
from governance.policy._compile import Policy, compile_policy
from governance.policy._eval import evaluate
from governance.policy._model import PolicyModel
from governance.policy._rules import Condition
from tests.policy_strategies import policy_contexts

TOOLS = ["fs.read", "fs.write", "fs.delete", "orders.lookup", "mcp.git.log", "shell.exec"]
ARGS = ["path", "amount", "query", "note"]
VALUES: list[Any] = [
    "reports/a.txt",
    "reports/../secrets.txt",
    "secrets/key",
    "/etc/passwd",
    "..",
    "select 1",
    "select 1; drop table x",
    "low",
    "high",
    "abc",
    "",
    0,
    50,
    150,
    -3,
    2.5,
    True,
    None,
    ["reports/a.txt"],
]


@dataclasses.dataclass(frozen=True, slots=True)
class ExplodingCheck:
    def test(self, value: object, *, negate: bool) -> bool:
        raise RuntimeError("boom")

    def describe(self) -> str:
        return "explodes"


def _one_or_many(values: Sequence[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(values), st.lists(st.sampled_from(values), min_size=1, max_size=3)
    )


def _bounds() -> st.SearchStrategy[dict[str, Any]]:
    return st.tuples(st.integers(-5, 200), st.integers(0, 200)).map(
        lambda t: {"min": min(t), "max": max(t)}
    )


conditions = st.tuples(
    st.sampled_from(ARGS),
    st.booleans(),
    st.one_of(
        st.sampled_from(["reports/", "secrets/"]).map(lambda p: {"path_prefix": p}),
        st.sampled_from(["[a-z]+", "select.*", ".*"]).map(lambda r: {"regex": r}),
        st.lists(st.sampled_from(["low", "high", 1, 50, True]), min_size=1, max_size=3).map(
            lambda e: {"enum": e}
        ),
        st.integers(0, 12).map(lambda n: {"max_length": n}),
        st.integers(-5, 200).map(lambda n: {"min": n}),
        st.integers(-5, 200).map(lambda n: {"max": n}),
        _bounds(),
        st.just({"sql_read_only": True}),
    ),
).map(lambda t: {"arg": t[0], "negate": t[1], **t[2]})

matches = st.fixed_dictionaries(
    {},
    optional={
        "tool": _one_or_many([*TOOLS, "fs.*", "*", "mcp.*.*"]),
        "namespace": _one_or_many(["fs", "orders", "mcp.*", "shell"]),
        "source": _one_or_many(["local", "mcp-git"]),
        "action_type": _one_or_many(ACTION_TYPES),
        "risk": _one_or_many(RISKS),
        "impact": _one_or_many(IMPACTS),
        "min_tokens_used": st.integers(0, 100),
        "tainted": st.booleans(),
    },
)


@st.composite
def rule_lists(draw: st.DrawFn) -> list[dict[str, Any]]:
    ids = draw(
        st.lists(st.sampled_from([f"r{i}" for i in range(12)]), min_size=1, max_size=8, unique=True)
    )
    return [
        {
            "id": rule_id,
            "description": draw(st.sampled_from(["", "because"])),
            "effect": draw(st.sampled_from(EFFECTS)),
            "enabled": draw(st.booleans()),
            "match": draw(matches),
            "when": draw(st.lists(conditions, max_size=2)),
        }
        for rule_id in ids
    ]


def contexts() -> st.SearchStrategy[PolicyContext]:
    return policy_contexts(TOOLS, ARGS, VALUES, max_args=4)


def _build(rules: Sequence[dict[str, Any]], unknown: str, exploding: frozenset[str]) -> Policy:
    model = PolicyModel.model_validate(
        {"version": 1, "defaults": {"unknown_tool": unknown}, "rules": list(rules)}
    )
    policy = compile_policy(model)
    compiled = tuple(
        dataclasses.replace(r, when=(*r.when, Condition("path", ExplodingCheck())))
        if r.id in exploding
        else r
        for r in policy.rules
    )
    return dataclasses.replace(policy, rules=compiled)


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    rules=rule_lists(),
    ctx=contexts(),
    unknown=st.sampled_from(["block", "require_approval"]),
)
def test_every_permutation_of_the_rules_gives_the_identical_decision(
    data: st.DataObject,
    rules: list[dict[str, Any]],
    ctx: PolicyContext,
    unknown: str,
) -> None:
    exploding = frozenset(data.draw(st.sets(st.sampled_from([r["id"] for r in rules]), max_size=2)))
    decision = evaluate(ctx, _build(rules, unknown, exploding))
    for _ in range(3):
        permuted = data.draw(st.permutations(rules))
        assert evaluate(ctx, _build(permuted, unknown, exploding)) == decision


@settings(max_examples=200, deadline=None)
@given(rules=rule_lists(), ctx=contexts(), unknown=st.sampled_from(["block", "require_approval"]))
def test_no_random_policy_allows_an_unknown_or_unmapped_tool(
    rules: list[dict[str, Any]], ctx: PolicyContext, unknown: str
) -> None:
    policy = _build(rules, unknown, frozenset())
    decision = evaluate(ctx, policy)
    if not ctx.known or ctx.action_type == "unknown":
        assert decision.effect != "allow"
    assert list(decision.rule_ids) == sorted(decision.rule_ids)
    by_id = {r.id: r for r in policy.rules}
    if decision.effect == "allow":
        assert decision.rule_ids
        assert all(by_id[i].enabled and by_id[i].effect == "allow" for i in decision.rule_ids)
    for rule in rules:
        # A rule that blocks on its own still blocks beside any other rules.
        alone = evaluate(ctx, _build([rule], unknown, frozenset()))
        if alone.reason in ("blocked_by_rule", "token_budget_exceeded"):
            assert decision.effect == "block" and rule["id"] in decision.rule_ids
    assert decision.policy_digest == policy.digest


@settings(max_examples=60, deadline=None)
@given(data=st.data(), rules=rule_lists())
def test_the_policy_digest_ignores_rule_order(
    data: st.DataObject, rules: list[dict[str, Any]]
) -> None:
    digest = _build(rules, "block", frozenset()).digest
    permuted = data.draw(st.permutations(rules))
    assert _build(permuted, "block", frozenset()).digest == digest
