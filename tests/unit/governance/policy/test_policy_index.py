"""The compiled decision path gives exactly the Decision of a walk over every rule.

`reference_decision` below is the straightforward algorithm, written out independently of the
engine's reduction: check every rule, then reduce block > require_approval > allow. The
indexed `evaluate` (candidates by tool name, cached per name) must agree with it, field for
field, on random policies and random calls — and so must `explain`.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from governance import Decision, PolicyContext, Principal, ToolCall, ToolDescriptor
from governance.core._contracts import ACTION_TYPES, EFFECTS, IMPACTS, RISKS
from governance.policy._compile import Policy, compile_policy
from governance.policy._eval import evaluate, explain
from governance.policy._index import MAX_CACHED_NAMES
from governance.policy._model import PolicyModel
from governance.policy._rules import Condition, Match, Rule
from tests.policy_strategies import policy_contexts

TOOLS = [
    "fs.read",
    "fs.write",
    "fs.delete",
    "fsx.read",
    "orders.lookup",
    "mcp.git.log",
    "mcp.files.read_file",
    "shell",
    "shell.exec",
    "",
]
TOOL_PATTERNS = [*TOOLS[:-1], "fs.*", "*", "mcp.*.*", "*.read", "fs.?????", "[fo]*.*", "sh*"]
NAMESPACES = ["fs", "orders", "mcp.git", "mcp.*", "shell", "f?", "*"]
ARGS = ["path", "amount", "query"]
VALUES: list[Any] = [
    "reports/a.txt",
    "reports",
    "Reports/a.txt",
    "reports/../secrets.txt",
    "secrets/key",
    "/etc/passwd",
    "select 1",
    "delete from x",
    "low",
    "",
    0,
    50,
    150,
    2.5,
    True,
    None,
    ["reports/a.txt"],
]


# -- the reference: every rule, one by one -----------------------------------------------------


def _reference_status(rule: Rule, context: PolicyContext) -> tuple[str, str, str]:
    """(status, effect, detail) of one rule, as the original walk over every rule computed it."""
    if not rule.enabled:
        return "disabled", rule.effect, ""
    try:
        if not rule.match.holds(context):
            return "not_matched", rule.effect, ""
        failing = rule.first_failing(context.arguments)
    except Exception as exc:
        return "error", "block", type(exc).__name__
    if failing is not None:
        return "condition_failed", rule.effect, failing.arg
    return "matched", rule.effect, ""


def _about(rules: Sequence[Rule]) -> str:
    text = ("rule " if len(rules) == 1 else "rules ") + ", ".join(r.id for r in rules)
    described = [r.description for r in rules if r.description]
    return f"{text}: {described[0]}" if described else text


def reference_decision(context: PolicyContext, policy: Policy) -> Decision:
    ordered = sorted(policy.rules, key=lambda r: r.id)
    statuses = [(rule, *_reference_status(rule, context)) for rule in ordered]

    def make(effect: str, rules: Sequence[Rule], reason: str, message: str) -> Decision:
        return Decision(
            effect,  # type: ignore[arg-type]
            tuple(r.id for r in rules),
            reason,
            policy.digest,
            context.registry_digest,
            message,
        )

    applied = [(r, e, d, s) for r, s, e, d in statuses if s in ("matched", "error")]
    blocks = [(r, d, s) for r, e, d, s in applied if e == "block"]
    if blocks:
        rules = [r for r, _, _ in blocks]
        errors = [(r, d) for r, d, s in blocks if s == "error"]
        if errors:
            names = ", ".join(f"{r.id} ({d})" for r, d in errors)
            return make(
                "block",
                rules,
                "rule_error",
                f"blocked: rule {names} failed to evaluate, so it blocks",
            )
        budget = any(r.match.min_tokens_used is not None for r in rules)
        reason = "token_budget_exceeded" if budget else "blocked_by_rule"
        return make("block", rules, reason, f"blocked by {_about(rules)}")
    if not context.known:
        effect = policy.defaults.unknown_tool
        verdict = "blocked" if effect == "block" else "held for approval"
        return make(
            effect,
            [],
            "unknown_tool",
            f"tool {context.tool!r} is not registered, so it is {verdict} by default",
        )
    holds = [r for r, e, _, _ in applied if e == "require_approval"]
    if holds:
        return make(
            "require_approval", holds, "approval_required", f"approval required by {_about(holds)}"
        )
    allows = [r for r, e, _, _ in applied if e == "allow"]
    if allows:
        if context.action_type == "unknown":
            return make(
                "require_approval",
                allows,
                "unmapped_tool",
                f"tool {context.tool!r} has no mapped action type, so {_about(allows)} "
                "needs a human approval before it applies",
            )
        return make("allow", allows, "allowed", f"allowed by {_about(allows)}")
    failed = [(r, d) for r, s, _, d in statuses if s == "condition_failed"]
    if failed:
        first, arg = failed[0]
        return make(
            "block",
            [r for r, _ in failed],
            f"invalid_argument:{arg}",
            f"argument {arg!r} does not satisfy rule {first.id}, and no other rule "
            f"applies to {context.tool}, so it is blocked by default",
        )
    return make(
        "block",
        [],
        "no_matching_rule",
        f"no rule applies to {context.tool}, so it is blocked by default",
    )


# -- random policies and calls ---------------------------------------------------------------


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


conditions = st.tuples(
    st.sampled_from(ARGS),
    st.booleans(),
    st.one_of(
        st.sampled_from(["reports/", "secrets/", "reports/a.txt"]).map(
            lambda p: {"path_prefix": p}
        ),
        st.sampled_from(["[a-z]+", "select.*", ".*"]).map(lambda r: {"regex": r}),
        st.lists(st.sampled_from(["low", 50, True]), min_size=1, max_size=2).map(
            lambda e: {"enum": e}
        ),
        st.integers(0, 12).map(lambda n: {"max_length": n}),
        st.integers(-5, 200).map(lambda n: {"min": n}),
        st.just({"sql_read_only": True}),
    ),
).map(lambda t: {"arg": t[0], "negate": t[1], **t[2]})

matches = st.fixed_dictionaries(
    {},
    optional={
        "tool": _one_or_many(TOOL_PATTERNS),
        "namespace": _one_or_many(NAMESPACES),
        "source": _one_or_many(["local", "mcp-git"]),
        "action_type": _one_or_many(ACTION_TYPES),
        "risk": _one_or_many(RISKS),
        "impact": _one_or_many(IMPACTS),
        "min_tokens_used": st.integers(0, 100),
        "tainted": st.booleans(),
    },
)


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    ids = draw(
        st.lists(
            st.sampled_from([f"r{i:02d}" for i in range(30)]), min_size=1, max_size=14, unique=True
        )
    )
    rules = [
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
    unknown = draw(st.sampled_from(["block", "require_approval"]))
    model = PolicyModel.model_validate(
        {"version": 1, "defaults": {"unknown_tool": unknown}, "rules": rules}
    )
    policy = compile_policy(model)
    exploding = draw(st.sets(st.sampled_from(ids), max_size=2))
    compiled = tuple(
        dataclasses.replace(r, when=(*r.when, Condition("path", ExplodingCheck())))
        if r.id in exploding
        else r
        for r in policy.rules
    )
    return dataclasses.replace(policy, rules=compiled)


@st.composite
def contexts(draw: st.DrawFn) -> PolicyContext:
    context = draw(policy_contexts(TOOLS, ARGS, VALUES, max_args=3))
    if draw(st.integers(0, 19)) == 0:  # a context a selector cannot read: the rule must raise
        context = dataclasses.replace(context, tokens_used=None)  # type: ignore[arg-type]
    return context


@settings(max_examples=400, deadline=None)
@given(policy=policies(), calls=st.lists(contexts(), min_size=1, max_size=6))
def test_the_indexed_decision_is_the_decision_of_a_walk_over_every_rule(
    policy: Policy, calls: list[PolicyContext]
) -> None:
    # Several calls against one policy object: the second call of a tool name reads the
    # candidates gathered for the first, and must still agree.
    for context in [*calls, *calls]:
        expected = reference_decision(context, policy)
        assert evaluate(context, policy) == expected
        assert explain(context, policy).decision == expected


# -- the index itself ------------------------------------------------------------------------


def _policy(*rules: Mapping[str, Any]) -> Policy:
    return compile_policy(PolicyModel.model_validate({"version": 1, "rules": list(rules)}))


def _context(tool: str, arguments: Mapping[str, Any] | None = None) -> PolicyContext:
    descriptor = ToolDescriptor(tool, "", {}, "local", "read", "low", True, False, True)
    call = ToolCall("c1", tool, dict(arguments or {}), "r", Principal("a", "b", "c"))
    return PolicyContext.for_call(call, descriptor, registry_digest="d")


def test_a_rule_for_another_tool_is_never_visited() -> None:
    policy = _policy(
        {"id": "reads", "effect": "allow", "match": {"tool": "fs.read"}},
        {"id": "writes", "effect": "allow", "match": {"tool": "fs.write"}},
    )
    # A condition that raises on `fs.write`'s rule cannot touch a call of `fs.read`...
    rules = tuple(
        dataclasses.replace(r, when=(Condition("path", ExplodingCheck()),))
        if r.id == "writes"
        else r
        for r in policy.rules
    )
    policy = dataclasses.replace(policy, rules=rules)
    assert evaluate(_context("fs.read", {"path": "a"}), policy).reason == "allowed"
    # ...and blocks a call of `fs.write`, as a rule that cannot be evaluated must.
    write = evaluate(_context("fs.write", {"path": "a"}), policy)
    assert (write.effect, write.reason, write.rule_ids) == ("block", "rule_error", ("writes",))


def test_glob_and_namespace_rules_apply_beside_exact_ones_in_rule_id_order() -> None:
    policy = _policy(
        {"id": "d-exact", "effect": "allow", "match": {"tool": "mcp.git.log"}},
        {"id": "c-glob", "effect": "allow", "match": {"tool": "mcp.*.log"}},
        {"id": "b-namespace", "effect": "allow", "match": {"namespace": "mcp.git"}},
        {"id": "a-every", "effect": "allow", "match": {}},
        {"id": "e-other", "effect": "allow", "match": {"namespace": "mcp.files"}},
    )
    decision = evaluate(_context("mcp.git.log"), policy)
    assert decision.rule_ids == ("a-every", "b-namespace", "c-glob", "d-exact")


def test_disabled_rules_are_not_candidates_even_when_they_would_block() -> None:
    policy = _policy(
        {"id": "allow", "effect": "allow", "match": {"tool": "fs.read"}},
        {"id": "off", "effect": "block", "enabled": False, "match": {"tool": "fs.read"}},
    )
    assert evaluate(_context("fs.read"), policy).rule_ids == ("allow",)


def test_invented_tool_names_cannot_grow_the_candidate_cache_past_its_bound() -> None:
    policy = _policy(
        {"id": "reads", "effect": "allow", "match": {"tool": "*.read"}},
        {"id": "hold", "effect": "require_approval", "match": {"namespace": "ns7"}},
    )
    for n in range(MAX_CACHED_NAMES + 300):
        decision = evaluate(_context(f"ns{n}.read"), policy)
        expected = ("hold",) if n == 7 else ("reads",)
        assert decision.rule_ids == expected
    assert len(policy.index._cache) == MAX_CACHED_NAMES
    # Past the bound, a name is still judged, and judged the same way.
    late = _context(f"ns{MAX_CACHED_NAMES + 1}.read")
    assert evaluate(late, policy) == reference_decision(late, policy)


def test_a_tool_name_that_is_not_a_string_is_judged_by_the_complete_path() -> None:
    policy = _policy(
        {"id": "reads", "effect": "allow", "match": {"tool": "fs.*"}},
        {"id": "any", "effect": "allow", "match": {}},
    )
    context = dataclasses.replace(_context("fs.read"), tool=7)  # type: ignore[arg-type]
    decision = evaluate(context, policy)
    assert (decision.effect, decision.reason) == ("block", "rule_error")
    assert decision == reference_decision(context, policy)


def test_a_rule_with_an_unreadable_selector_fails_closed_on_every_call() -> None:
    policy = _policy({"id": "any", "effect": "allow", "match": {"tool": "fs.read"}})
    odd = dataclasses.replace(policy.rules[0], match=Match(tool=(7,)))  # type: ignore[arg-type]
    policy = dataclasses.replace(policy, rules=(odd,))
    for _ in range(2):  # gathered once, then read from the cache
        decision = evaluate(_context("fs.read"), policy)
        assert (decision.effect, decision.reason, decision.rule_ids) == (
            "block",
            "rule_error",
            ("any",),
        )


def test_a_compiled_policy_survives_pickling_into_a_worker() -> None:
    policy = _policy(
        {"id": "reads", "effect": "allow", "match": {"tool": "fs.read"}},
        {
            "id": "no-secrets",
            "effect": "block",
            "match": {"namespace": "fs"},
            "when": [{"arg": "path", "path_prefix": "secrets/"}],
        },
    )
    evaluate(_context("fs.read", {"path": "x"}), policy)  # fill the cache before copying
    copy = pickle.loads(pickle.dumps(policy))
    for path in ("reports/a", "secrets/k", "Secrets/k"):
        context = _context("fs.read", {"path": path})
        assert evaluate(context, copy) == evaluate(context, policy)
    assert copy == policy and copy.digest == policy.digest
