"""Policy evaluation: selectors, conditions, precedence, fail-closed defaults, rule errors."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from governance import Decision, PolicyContext, Principal, RunUsage, ToolCall, ToolDescriptor
from governance.policy._compile import Policy, compile_policy
from governance.policy._eval import evaluate, explain
from governance.policy._model import PolicyModel
from governance.policy._rules import Condition


def make_policy(*rules: Mapping[str, Any], **defaults: str) -> Policy:
    data: dict[str, Any] = {"version": 1, "rules": [dict(r) for r in rules]}
    if defaults:
        data["defaults"] = defaults
    return compile_policy(PolicyModel.model_validate(data))


def rule(
    rule_id: str, effect: str, match: Mapping[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    return {"id": rule_id, "effect": effect, "match": dict(match or {}), **extra}


def context(
    tool: str = "fs.read",
    arguments: Mapping[str, Any] | None = None,
    *,
    known: bool = True,
    tokens: int = 0,
    tainted: bool = False,
    **facts: Any,
) -> PolicyContext:
    fields: dict[str, Any] = {
        "name": tool,
        "description": tool,
        "input_schema": {"type": "object"},
        "source": "local",
        "action_type": "read",
        "risk": "low",
        "reversible": True,
        "external_side_effect": False,
        "idempotent": True,
    }
    fields.update(facts)
    call = ToolCall("c1", tool, dict(arguments or {}), "run-1", Principal("ann", "bot", "ops"))
    return PolicyContext.for_call(
        call,
        ToolDescriptor(**fields) if known else None,
        registry_digest="sha256:registry",
        usage=RunUsage(tokens_used=tokens, tainted=tainted),
    )


ALLOW_ALL = rule("allow-all", "allow")


# -- selectors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("match", "ctx", "applies"),
    [
        ({"tool": "fs.read"}, context("fs.read"), True),
        ({"tool": "fs.read"}, context("fs.write"), False),
        ({"tool": ["fs.list", "fs.read"]}, context("fs.read"), True),
        ({"tool": "fs.*"}, context("fs.delete"), True),
        ({"tool": "fs.*"}, context("fsx.read"), False),
        ({"tool": "FS.READ"}, context("fs.read"), False),
        ({"namespace": "fs"}, context("fs.read"), True),
        ({"namespace": "fs"}, context("orders.lookup"), False),
        ({"namespace": "mcp.git"}, context("mcp.git.log"), True),
        ({"namespace": "mcp"}, context("mcp.git.log"), False),
        ({"source": "local"}, context(source="local"), True),
        ({"source": ["mcp-git"]}, context(source="local"), False),
        ({"action_type": "read"}, context(action_type="read"), True),
        ({"action_type": ["write", "destructive"]}, context(action_type="read"), False),
        ({"risk": ["low", "medium"]}, context(risk="medium"), True),
        ({"risk": "low"}, context(risk="high"), False),
        ({"impact": "write"}, context(action_type="write"), True),
        ({"impact": "write"}, context(action_type="write", reversible=False), False),
        ({"impact": "destructive"}, context(action_type="read", external_side_effect=True), True),
        ({"min_tokens_used": 5000}, context(tokens=5000), True),
        ({"min_tokens_used": 5000}, context(tokens=4999), False),
        ({"tainted": True}, context(tainted=True), True),
        ({"tainted": True}, context(tainted=False), False),
        ({"tainted": False}, context(tainted=False), True),
        ({"tool": "fs.read", "risk": "low", "tainted": True}, context(tainted=False), False),
        ({}, context("anything.at_all"), True),
    ],
)
def test_each_selector_must_hold_for_a_rule_to_apply(
    match: dict[str, Any], ctx: PolicyContext, applies: bool
) -> None:
    decision = evaluate(ctx, make_policy(rule("r", "allow", match)))
    assert (decision.effect == "allow") is applies
    assert decision.rule_ids == (("r",) if applies else ())


# -- conditions --------------------------------------------------------------------------


def _when_passes(condition: dict[str, Any], arguments: dict[str, Any]) -> bool:
    policy = make_policy(rule("r", "allow", when=[condition]))
    return evaluate(context("demo.tool", arguments), policy).effect == "allow"


@pytest.mark.parametrize(
    ("condition", "arguments", "passes"),
    [
        ({"arg": "note", "regex": "^[a-z ]+$"}, {"note": "all good"}, True),
        ({"arg": "note", "regex": "[a-z]+"}, {"note": "abc; rm -rf"}, False),  # fullmatch
        ({"arg": "note", "regex": "[a-z]+"}, {"note": 5}, False),
        ({"arg": "note", "regex": "[a-z]+", "negate": True}, {"note": "ABC"}, True),
        ({"arg": "note", "regex": "[a-z]+", "negate": True}, {"note": 5}, False),
        ({"arg": "priority", "enum": ["low", "high"]}, {"priority": "low"}, True),
        ({"arg": "priority", "enum": ["low", "high"]}, {"priority": "urgent"}, False),
        ({"arg": "priority", "enum": [1, 2]}, {"priority": True}, False),  # True is not 1
        ({"arg": "priority", "enum": [1, 2]}, {"priority": "1"}, False),
        ({"arg": "priority", "enum": [1, 2]}, {"priority": 2.0}, True),
        ({"arg": "priority", "enum": ["low"], "negate": True}, {"priority": "high"}, True),
        ({"arg": "priority", "enum": ["low"], "negate": True}, {"priority": ["x"]}, False),
        ({"arg": "body", "max_length": 5}, {"body": "12345"}, True),
        ({"arg": "body", "max_length": 5}, {"body": "123456"}, False),
        ({"arg": "body", "max_length": 5}, {"body": 12}, False),
        ({"arg": "body", "max_length": 2}, {"body": ["a", "b"]}, True),
        ({"arg": "amount", "min": 0, "max": 500}, {"amount": 500}, True),
        ({"arg": "amount", "min": 0, "max": 500}, {"amount": 0.0}, True),
        ({"arg": "amount", "min": 0, "max": 500}, {"amount": 500.01}, False),
        ({"arg": "amount", "min": 0, "max": 500}, {"amount": -1}, False),
        ({"arg": "amount", "min": 0, "max": 500}, {"amount": "100"}, False),
        ({"arg": "amount", "min": 0, "max": 500}, {"amount": True}, False),
        ({"arg": "amount", "min": 0, "max": 500}, {"amount": float("nan")}, False),
        ({"arg": "amount", "min": 10}, {"amount": 10**9}, True),
        ({"arg": "amount", "max": 100, "negate": True}, {"amount": 101}, True),
        ({"arg": "amount", "max": 100, "negate": True}, {"amount": 100}, False),
        ({"arg": "amount", "max": 100, "negate": True}, {"amount": "lots"}, False),
        ({"arg": "query", "sql_read_only": True}, {"query": "select 1"}, True),
        ({"arg": "query", "sql_read_only": True}, {"query": "delete from t"}, False),
        ({"arg": "query", "sql_read_only": True, "negate": True}, {"query": "drop table t"}, True),
        ({"arg": "query", "sql_read_only": True}, {"query": None}, False),
        ({"arg": "path", "path_prefix": "reports/"}, {"path": "reports/a.txt"}, True),
        ({"arg": "path", "path_prefix": "reports/"}, {"path": ["reports/a.txt"]}, False),
    ],
)
def test_each_condition_kind_passes_or_fails(
    condition: dict[str, Any], arguments: dict[str, Any], passes: bool
) -> None:
    assert _when_passes(condition, arguments) is passes


@pytest.mark.parametrize("negate", [False, True])
@pytest.mark.parametrize(
    "condition",
    [
        {"arg": "x", "regex": ".*"},
        {"arg": "x", "enum": ["a"]},
        {"arg": "x", "max_length": 10},
        {"arg": "x", "min": 0},
        {"arg": "x", "sql_read_only": True},
        {"arg": "x", "path_prefix": "reports/"},
    ],
)
def test_a_missing_argument_fails_its_condition_even_when_negated(
    condition: dict[str, Any], negate: bool
) -> None:
    assert not _when_passes({**condition, "negate": negate}, {"other": "value"})


def test_all_when_conditions_must_hold() -> None:
    policy = make_policy(
        rule(
            "r",
            "allow",
            when=[{"arg": "a", "enum": ["ok"]}, {"arg": "b", "max_length": 3}],
        )
    )
    assert evaluate(context(arguments={"a": "ok", "b": "abc"}), policy).effect == "allow"
    denied = evaluate(context(arguments={"a": "ok", "b": "abcd"}), policy)
    assert denied.effect == "block" and denied.reason == "invalid_argument:b"


# -- precedence --------------------------------------------------------------------------

HOLD = rule("hold", "require_approval", {"tool": "fs.*"}, description="writes need a human")
BLOCK = rule("deny", "block", {"tool": "fs.read"}, description="no reading")
ALLOW = rule("allow-reads", "allow", {"action_type": "read"}, description="reads are fine")


@pytest.mark.parametrize(
    ("rules", "effect", "rule_ids", "reason"),
    [
        ([ALLOW, BLOCK], "block", ("deny",), "blocked_by_rule"),
        ([BLOCK, ALLOW], "block", ("deny",), "blocked_by_rule"),
        ([ALLOW, HOLD], "require_approval", ("hold",), "approval_required"),
        ([HOLD, ALLOW], "require_approval", ("hold",), "approval_required"),
        ([HOLD, BLOCK], "block", ("deny",), "blocked_by_rule"),
        ([BLOCK, HOLD], "block", ("deny",), "blocked_by_rule"),
        ([ALLOW, HOLD, BLOCK], "block", ("deny",), "blocked_by_rule"),
        ([ALLOW], "allow", ("allow-reads",), "allowed"),
    ],
)
def test_precedence_is_block_then_approval_then_allow_in_any_order(
    rules: list[dict[str, Any]], effect: str, rule_ids: tuple[str, ...], reason: str
) -> None:
    decision = evaluate(context("fs.read"), make_policy(*rules))
    assert (decision.effect, decision.rule_ids, decision.reason) == (effect, rule_ids, reason)


def test_rule_ids_are_every_rule_carrying_the_winning_effect_sorted() -> None:
    policy = make_policy(
        rule("z-block", "block", {"tool": "fs.read"}),
        rule("a-block", "block", {"namespace": "fs"}),
        rule("m-allow", "allow"),
    )
    decision = evaluate(context("fs.read"), policy)
    assert decision.rule_ids == ("a-block", "z-block")
    assert "m-allow" not in decision.rule_ids


def test_decision_names_the_rule_and_its_description_and_carries_both_digests() -> None:
    policy = make_policy(
        rule(
            "fs-no-delete", "block", {"tool": "fs.delete"}, description="Deleting is never allowed"
        )
    )
    decision = evaluate(context("fs.delete", action_type="destructive"), policy)
    assert decision.message == "blocked by rule fs-no-delete: Deleting is never allowed"
    assert decision.policy_digest == policy.digest and policy.digest.startswith("sha256:")
    assert decision.registry_digest == "sha256:registry"


def test_disabled_rules_are_ignored_entirely() -> None:
    policy = make_policy(
        rule("off-block", "block", enabled=False),
        rule("off-allow", "allow", {"tool": "fs.write"}, enabled=False),
        ALLOW,
    )
    assert evaluate(context("fs.read"), policy).effect == "allow"
    off = evaluate(context("fs.write", action_type="write"), policy)
    assert (off.effect, off.reason, off.rule_ids) == ("block", "no_matching_rule", ())
    statuses = {o.rule_id: o.status for o in explain(context("fs.read"), policy).outcomes}
    assert statuses["off-block"] == statuses["off-allow"] == "disabled"


# -- fail-closed defaults ----------------------------------------------------------------


def test_no_matching_rule_blocks() -> None:
    decision = evaluate(context("orders.lookup"), make_policy(BLOCK))
    assert (decision.effect, decision.reason, decision.rule_ids) == (
        "block",
        "no_matching_rule",
        (),
    )


def test_a_failed_condition_is_reported_as_an_invalid_argument_of_the_first_rule_by_id() -> None:
    policy = make_policy(
        rule("z-write", "allow", {"tool": "fs.write"}, when=[{"arg": "size", "max": 10}]),
        rule(
            "a-write",
            "allow",
            {"tool": "fs.write"},
            when=[{"arg": "path", "path_prefix": "reports/"}, {"arg": "size", "max": 10}],
        ),
        rule("other", "allow", {"tool": "orders.lookup"}, when=[{"arg": "zzz", "enum": [1]}]),
    )
    decision = evaluate(
        context("fs.write", {"path": "secrets/x", "size": 50}, action_type="write"), policy
    )
    assert decision.effect == "block"
    assert decision.reason == "invalid_argument:path"
    assert decision.rule_ids == ("a-write", "z-write")


@pytest.mark.parametrize("default", ["block", "require_approval"])
def test_an_unknown_tool_gets_the_unknown_tool_default_and_never_reaches_an_allow(
    default: str,
) -> None:
    policy = make_policy(
        rule("everything", "allow", {"tool": "*"}),
        rule("all-critical", "allow", {"risk": "critical", "impact": "unknown"}),
        unknown_tool=default,
    )
    decision = evaluate(context("shell.exec", known=False), policy)
    assert decision.effect == default
    assert decision.reason == "unknown_tool"
    assert decision.rule_ids == ()


def test_an_unknown_tool_with_a_matching_block_rule_is_blocked_by_that_rule() -> None:
    policy = make_policy(
        rule("no-shell", "block", {"namespace": "shell"}, description="no shells"),
        rule("everything", "allow", {"tool": "*"}),
        unknown_tool="require_approval",
    )
    decision = evaluate(context("shell.exec", known=False), policy)
    assert (decision.effect, decision.reason, decision.rule_ids) == (
        "block",
        "blocked_by_rule",
        ("no-shell",),
    )


def test_an_unknown_tool_is_not_helped_by_an_approval_rule_when_the_default_is_block() -> None:
    policy = make_policy(rule("hold-all", "require_approval"), unknown_tool="block")
    decision = evaluate(context("shell.exec", known=False), policy)
    assert (decision.effect, decision.reason) == ("block", "unknown_tool")


def test_an_unmapped_known_tool_is_held_instead_of_allowed() -> None:
    policy = make_policy(rule("mcp-ok", "allow", {"namespace": "mcp.*"}))
    decision = evaluate(context("mcp.git.log", action_type="unknown"), policy)
    assert (decision.effect, decision.reason, decision.rule_ids) == (
        "require_approval",
        "unmapped_tool",
        ("mcp-ok",),
    )


def test_an_unmapped_known_tool_can_still_be_blocked() -> None:
    policy = make_policy(rule("ok", "allow"), rule("no", "block", {"tool": "mcp.git.push"}))
    decision = evaluate(context("mcp.git.push", action_type="unknown"), policy)
    assert (decision.effect, decision.reason) == ("block", "blocked_by_rule")


# -- token budget and taint ----------------------------------------------------------------

TOKEN_RULE = rule("token-budget", "block", {"min_tokens_used": 50_000}, description="enough")


def test_the_token_budget_rule_blocks_at_its_threshold_with_its_own_reason() -> None:
    policy = make_policy(TOKEN_RULE, ALLOW)
    assert evaluate(context(tokens=49_999), policy).effect == "allow"
    decision = evaluate(context(tokens=50_000), policy)
    assert (decision.effect, decision.reason, decision.rule_ids) == (
        "block",
        "token_budget_exceeded",
        ("token-budget",),
    )


def test_token_budget_reason_wins_over_plain_blocks_when_both_apply() -> None:
    decision = evaluate(context(tokens=60_000), make_policy(TOKEN_RULE, BLOCK))
    assert decision.reason == "token_budget_exceeded"
    assert decision.rule_ids == ("deny", "token-budget")


def test_a_tainted_run_needs_approval_for_writes_while_a_clean_run_does_not() -> None:
    policy = make_policy(
        rule("writes", "allow", {"action_type": "write"}),
        rule("tainted-writes", "require_approval", {"tainted": True, "impact": ["write"]}),
    )
    clean = evaluate(context("fs.write", action_type="write"), policy)
    dirty = evaluate(context("fs.write", action_type="write", tainted=True), policy)
    assert clean.effect == "allow"
    assert (dirty.effect, dirty.rule_ids) == ("require_approval", ("tainted-writes",))


# -- a rule that raises --------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class ExplodingCheck:
    def test(self, value: object, *, negate: bool) -> bool:
        raise RuntimeError("boom")

    def describe(self) -> str:
        return "explodes"


def _with_exploding_condition(policy: Policy, rule_id: str) -> Policy:
    rules = tuple(
        dataclasses.replace(r, when=(Condition("path", ExplodingCheck()),))
        if r.id == rule_id
        else r
        for r in policy.rules
    )
    return dataclasses.replace(policy, rules=rules)


def test_a_rule_that_raises_counts_as_a_block_with_reason_rule_error() -> None:
    policy = _with_exploding_condition(make_policy(ALLOW, rule("fragile", "allow")), "fragile")
    decision = evaluate(context("fs.read", {"path": "a"}), policy)
    assert (decision.effect, decision.reason, decision.rule_ids) == (
        "block",
        "rule_error",
        ("fragile",),
    )
    assert "RuntimeError" in decision.message


def test_rule_error_outranks_the_token_budget_reason() -> None:
    policy = _with_exploding_condition(make_policy(TOKEN_RULE, rule("fragile", "allow")), "fragile")
    decision = evaluate(context("fs.read", {"path": "a"}, tokens=90_000), policy)
    assert decision.reason == "rule_error"
    assert decision.rule_ids == ("fragile", "token-budget")


class ExplodingArguments(Mapping[str, Any]):
    """Arguments whose every access fails, like a hostile or broken mapping."""

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        raise ValueError("cannot look")

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def test_arguments_that_raise_on_access_block_every_rule_that_inspects_them() -> None:
    policy = make_policy(rule("ok", "allow", when=[{"arg": "path", "regex": ".*"}]))
    ctx = dataclasses.replace(context("fs.read"), arguments=ExplodingArguments())
    decision = evaluate(ctx, policy)
    assert (decision.effect, decision.reason, decision.rule_ids) == ("block", "rule_error", ("ok",))


def test_a_rule_that_raises_blocks_even_an_unknown_tool_held_by_default() -> None:
    policy = _with_exploding_condition(make_policy(rule("fragile", "allow")), "fragile")
    ctx = context("shell.exec", {"path": "x"}, known=False)
    decision = evaluate(
        ctx,
        dataclasses.replace(
            policy, defaults=dataclasses.replace(policy.defaults, unknown_tool="require_approval")
        ),
    )
    assert (decision.effect, decision.reason) == ("block", "rule_error")


# -- explain -------------------------------------------------------------------------------


def test_explain_reports_every_rule_and_every_match_whatever_its_effect() -> None:
    policy = make_policy(
        ALLOW,
        HOLD,
        rule("writes", "allow", {"tool": "fs.write"}),
        rule("cond", "allow", {"tool": "fs.read"}, when=[{"arg": "path", "enum": ["a"]}]),
    )
    result = explain(context("fs.read", {"path": "b"}), policy)
    assert result.matched_rule_ids == ("allow-reads", "hold")
    statuses = {o.rule_id: (o.status, o.failed_arg) for o in result.outcomes}
    assert statuses == {
        "allow-reads": ("matched", None),
        "cond": ("condition_failed", "path"),
        "hold": ("matched", None),
        "writes": ("not_matched", None),
    }
    assert result.decision == evaluate(context("fs.read", {"path": "b"}), policy)
    assert isinstance(result.decision, Decision)


def test_a_rule_whose_match_raises_blocks_with_rule_error() -> None:
    ctx = dataclasses.replace(context("fs.read"), tokens_used=None)  # type: ignore[arg-type]
    decision = evaluate(ctx, make_policy(TOKEN_RULE, ALLOW))
    assert (decision.effect, decision.reason, decision.rule_ids) == (
        "block",
        "rule_error",
        ("token-budget",),
    )


def test_a_restrictive_rule_applies_to_values_it_cannot_judge() -> None:
    from governance import Principal, ToolCall, ToolDescriptor, parse_policy
    from governance.core._contracts import PolicyContext

    policy = parse_policy(
        "version: 1\nrules:\n"
        "  - {id: reads, effect: allow, match: {tool: mcp.files.read_file}}\n"
        "  - id: no-secrets\n    effect: block\n    match: {tool: mcp.files.read_file}\n"
        "    when: [{arg: path, path_prefix: secrets/}]\n"
    )
    tool = ToolDescriptor(
        "mcp.files.read_file", "", {}, "files", "read", "low", True, False, True
    )
    outcomes = {}
    for path in ("secrets/k", "Secrets/k", "/srv/ws/secrets/k", "../secrets/k", 7, "notes/a"):
        call = ToolCall("c1", tool.name, {"path": path}, "r", Principal("a", "b", "c"))
        context = PolicyContext.for_call(call, tool, registry_digest="d")
        outcomes[str(path)] = evaluate(context, policy).effect
    assert outcomes == {
        "secrets/k": "block",
        "Secrets/k": "block",
        "/srv/ws/secrets/k": "block",
        "../secrets/k": "block",
        "7": "block",
        "notes/a": "allow",
    }
