"""Policy mutation operators: each weakening's exact document, and never a stronger policy."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from governance import PolicyContext, Principal, RunUsage, ToolCall
from governance.policy._compile import Policy
from governance.policy._eval import evaluate
from governance.policy._load import parse_policy
from harness._mutate import Kill, Mutant, kill_of, mutants_of, order_scenarios
from harness._suite import builtin_registry

DEFAULT_POLICY = Path(__file__).resolve().parents[3] / "governance" / "data" / "default_policy.yaml"

SMALL: dict[str, Any] = {
    "version": 1,
    "rules": [
        {
            "id": "notes-read",
            "effect": "allow",
            "match": {"tool": "fs.read", "action_type": "read"},
            "when": [{"arg": "path", "path_prefix": "notes/"}],
        },
        {
            "id": "no-secrets",
            "effect": "block",
            "match": {"namespace": "fs"},
            "when": [{"arg": "path", "path_prefix": "secrets/keys/"}],
        },
        {
            "id": "big-refunds",
            "effect": "require_approval",
            "match": {"tool": "refunds.create_draft"},
            "when": [{"arg": "amount", "max": 100, "negate": True}],
        },
        {"id": "off", "effect": "allow", "enabled": False, "match": {"tool": "x.y"}},
    ],
    "budgets": [
        {"id": "deletes", "scope": "agent_run", "limit": 2, "window_seconds": 3600},
    ],
}


def _by_key(policy: dict[str, Any]) -> dict[tuple[str, str], Mutant]:
    return {m.key: m for m in mutants_of(policy)}


def _rule(mutant: Mutant, index: int) -> Any:
    return mutant.data["rules"][index]


def test_mutants_are_exactly_the_weakenings_of_each_rule_and_budget() -> None:
    assert list(_by_key(SMALL)) == [
        ("rule:notes-read", "disable"),
        ("rule:notes-read", "match.tool:drop"),
        ("rule:notes-read", "match.action_type:drop"),
        ("rule:notes-read", "when[0]:drop"),
        ("rule:notes-read", "when[0]:widen"),
        ("rule:no-secrets", "effect:require_approval"),
        ("rule:no-secrets", "disable"),
        ("rule:no-secrets", "when[0]:widen"),
        ("rule:big-refunds", "effect:allow"),
        ("rule:big-refunds", "disable"),
        ("rule:big-refunds", "when[0]:widen"),
        ("budget:deletes", "limit:x1000"),
        ("budget:deletes", "window:/60"),
        ("budget:deletes", "delete"),
    ]


def test_each_rule_mutant_changes_only_its_rule_as_expected() -> None:
    m = _by_key(SMALL)
    notes, secrets, refunds = SMALL["rules"][0], SMALL["rules"][1], SMALL["rules"][2]
    assert _rule(m["rule:notes-read", "disable"], 0) == {**notes, "enabled": False}
    assert _rule(m["rule:notes-read", "match.tool:drop"], 0)["match"] == {"action_type": "read"}
    assert _rule(m["rule:notes-read", "match.action_type:drop"], 0)["match"] == {
        "tool": "fs.read"
    }
    assert _rule(m["rule:notes-read", "when[0]:drop"], 0) == {**notes, "when": []}
    # A top-level folder loosens to the string-prefix bug: siblings such as notes-old/ too.
    assert _rule(m["rule:notes-read", "when[0]:widen"], 0)["when"] == [
        {"arg": "path", "regex": "notes.*"}
    ]
    assert _rule(m["rule:no-secrets", "effect:require_approval"], 1) == {
        **secrets,
        "effect": "require_approval",
    }
    # A block rule is weakened by covering less: a narrower folder, never the parent.
    assert _rule(m["rule:no-secrets", "when[0]:widen"], 1)["when"] == [
        {"arg": "path", "path_prefix": "secrets/keys/narrowed"}
    ]
    assert _rule(m["rule:big-refunds", "effect:allow"], 2) == {**refunds, "effect": "allow"}
    # Negated on a restrictive rule: "not at most 100" holds less when 100 grows.
    assert _rule(m["rule:big-refunds", "when[0]:widen"], 2)["when"] == [
        {"arg": "amount", "max": 100000, "negate": True}
    ]
    for mutant in m.values():
        others = [r for r in mutant.data["rules"] if f"rule:{r['id']}" != mutant.target]
        assert others == [r for r in SMALL["rules"] if f"rule:{r['id']}" != mutant.target]


def test_budget_mutants_raise_the_limit_shrink_the_window_or_delete_it() -> None:
    m = _by_key(SMALL)
    assert m["budget:deletes", "limit:x1000"].data["budgets"] == [
        {**SMALL["budgets"][0], "limit": 2000}
    ]
    assert m["budget:deletes", "window:/60"].data["budgets"] == [
        {**SMALL["budgets"][0], "window_seconds": 60}
    ]
    assert m["budget:deletes", "delete"].data["budgets"] == []


def test_a_nested_prefix_of_an_allow_rule_widens_to_its_parent() -> None:
    policy = {**SMALL, "rules": [{**SMALL["rules"][0], "when": [
        {"arg": "path", "path_prefix": "notes/team/"}]}]}  # fmt: skip
    widened = _by_key(policy)["rule:notes-read", "when[0]:widen"]
    assert _rule(widened, 0)["when"] == [{"arg": "path", "path_prefix": "notes"}]


def test_a_negated_condition_of_an_allow_rule_is_narrowed_not_widened() -> None:
    rule = {"id": "r", "effect": "allow", "match": {"tool": "fs.read"},
            "when": [{"arg": "path", "path_prefix": "secrets/", "negate": True}]}  # fmt: skip
    widened = _by_key({**SMALL, "rules": [rule]})["rule:r", "when[0]:widen"]
    assert _rule(widened, 0)["when"] == [
        {"arg": "path", "path_prefix": "secrets/narrowed", "negate": True}
    ]


def test_no_mutant_broadens_a_restrictive_rule_or_flips_a_negate() -> None:
    mutations = {m.mutation for m in mutants_of(SMALL) if m.target != "rule:notes-read"}
    assert not {x for x in mutations if x.startswith("match.") or x.endswith(":drop")}
    assert not {x for x in mutations if "negate" in x}


def test_the_mutated_documents_never_touch_the_original() -> None:
    before = json.dumps(SMALL, sort_keys=True)
    mutants_of(SMALL)
    assert json.dumps(SMALL, sort_keys=True) == before


# -- never stronger: every mutant of the shipped policy, on a grid of real calls -------------

_RANK = {"allow": 0, "require_approval": 1, "block": 2}
_PATHS = ["notes/a.txt", "notes", "notes-old/a.txt", "reports/q3.md", "reports", "reports-old/x",
          "reports/archive/q3.md", "secrets/k.txt", "secrets", "secrets/narrowed/k", "Secrets/k",
          "/etc/passwd", ".", "reports/narrowed/x"]  # fmt: skip
_MOVES = list(itertools.product(_PATHS[:7], repeat=2))
_AMOUNTS = (1, 100, 100.5, 5000, 10**6)
_CALLS: list[tuple[str, dict[str, Any]]] = [
    *((t, {"path": p}) for t in ("fs.list", "fs.read", "fs.write", "fs.delete") for p in _PATHS),
    *(("fs.search", {"query": "q", "path": p}) for p in _PATHS),
    ("fs.search", {"query": "q"}),
    ("fs.list", {}),
    *(("fs.move", {"source": s, "destination": d}) for s, d in _MOVES),
    *(("refunds.create_draft", {"order_id": "o", "amount": a, "reason": "r"}) for a in _AMOUNTS),
    ("db.query", {"sql": "select 1"}),
    ("db.query", {"sql": "delete from orders"}),
    ("orders.lookup", {"order_id": "ORD-1"}),
    ("tickets.create", {"title": "t", "body": "b"}),
    ("email.send", {"to": "a@example.com", "subject": "s", "body": "b"}),
    ("shell.exec", {"command": "ls"}),
]  # fmt: skip


def _contexts() -> list[PolicyContext]:
    registry = builtin_registry()
    principal = Principal("ann", "bot", "ops")
    out = []
    for (tool, args), tainted, tokens in itertools.product(_CALLS, (False, True), (0, 60_000)):
        call = ToolCall("c1", tool, args, "run", principal)
        out.append(
            PolicyContext.for_call(
                call,
                registry.get(tool),
                registry_digest="r",
                usage=RunUsage(tokens_used=tokens, tainted=tainted),
            )
        )
    return out


def _compiled(data: Any) -> Policy:
    return parse_policy(json.dumps(data), "mutant")


def test_no_mutant_of_the_shipped_policy_refuses_a_call_the_policy_allows() -> None:
    """Except an allow rule disabled: the one stricter mutant, kept on purpose (a rule whose
    allowing nobody would miss is dead weight; coverage's "decisive" in mutation form)."""
    document = yaml.safe_load(DEFAULT_POLICY.read_text(encoding="utf-8"))
    original = _compiled(document)
    contexts = _contexts()
    before = [evaluate(c, original) for c in contexts]
    assert {d.effect for d in before} == {"allow", "require_approval", "block"}
    mutants = mutants_of(document)
    assert len(mutants) > 40
    for mutant in mutants:
        policy = _compiled(mutant.data)
        rule = next((r for r in document["rules"] if f"rule:{r['id']}" == mutant.target), None)
        if rule is not None and rule["effect"] == "allow" and mutant.mutation == "disable":
            continue
        for context, old in zip(contexts, before, strict=True):
            new = evaluate(context, policy)
            where = f"{mutant.target} {mutant.mutation} on {context.tool} {dict(context.arguments)}"
            if old.effect == "allow":
                assert new.effect == "allow", where
            if _RANK[new.effect] <= _RANK[old.effect]:
                continue
            # Only a require_approval rule, taken away, can leave a call it held to the
            # fail-closed default (no rule allows it): never to another rule's block.
            assert rule is not None and rule["effect"] == "require_approval", where
            assert (old.effect, new.effect) == ("require_approval", "block"), where
            assert new.reason == "no_matching_rule" or new.reason.startswith(
                "invalid_argument:"
            ), where


# -- the verdict ---------------------------------------------------------------------------


def test_a_passing_check_that_fails_against_the_mutant_kills_it() -> None:
    kill = kill_of("s1", {"a": True, "b": True}, {"a": True, "b": False})
    assert kill == Kill("s1", "check b fails")


def test_a_passing_check_the_mutant_no_longer_produces_kills_it() -> None:
    assert kill_of("s1", {"a": True, "gone": True}, {"a": True}) == Kill(
        "s1", "check gone is no longer produced"
    )


def test_the_same_results_or_an_already_failing_check_let_the_mutant_survive() -> None:
    assert kill_of("s1", {"a": True}, {"a": True}) is None
    # A check that failed against the real policy proves nothing about the mutant.
    assert kill_of("s1", {"a": True, "bad": False}, {"a": True, "bad": False}) is None
    assert kill_of("s1", {"bad": False}, {}) is None
    # A new check the mutant produces (and passes or fails) is not a kill either.
    assert kill_of("s1", {"a": True}, {"a": True, "extra": False}) is None


@pytest.mark.parametrize(
    ("ids", "likely", "expected"),
    [
        (["a", "b", "c"], ["c"], ["c", "a", "b"]),
        (["a", "b", "c"], [], ["a", "b", "c"]),
        (["a", "b", "c"], ["c", "a", "zz"], ["a", "c", "b"]),
    ],
)
def test_scenarios_where_the_target_showed_up_run_first(
    ids: list[str], likely: list[str], expected: list[str]
) -> None:
    assert order_scenarios(ids, likely) == expected
