"""`explain` runs only the rules the index lists for the tool, and reports every rule exactly
as running all of them would."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from governance import PolicyContext, Principal, RunUsage, ToolCall
from governance.policy._eval import _outcome, explain, explained_decision
from governance.policy._load import parse_policy
from governance.policy._rules import Match
from harness._suite import builtin_registry

POLICY = """
version: 1
rules:
  - id: read-notes
    effect: allow
    match: {tool: fs.read}
    when: [{arg: path, path_prefix: notes/}]
  - {id: fs-any, effect: require_approval, match: {namespace: fs}}
  - {id: glob-orders, effect: allow, match: {tool: "orders.*"}}
  - {id: email-off, effect: block, enabled: false, match: {tool: email.send}}
  - {id: reads, effect: allow, match: {action_type: [read]}}
  - {id: tainted-writes, effect: block, match: {impact: [write, destructive], tainted: true}}
  - {id: many-tokens, effect: block, match: {tool: db.query, min_tokens_used: 100}}
  - {id: ns-glob, effect: block, match: {namespace: "ti*"}}
"""
TOOLS = ("fs.read", "fs.delete", "orders.lookup", "email.send", "db.query", "tickets.create",
         "nope.nothing", "fs")  # fmt: skip
ARGS = ({}, {"path": "notes/a.txt"}, {"path": "secrets/k"})


def _context(tool: str, args: dict[str, object], tainted: bool, tokens: int) -> PolicyContext:
    registry = builtin_registry()
    call = ToolCall("c1", tool, args, "run", Principal("ann", "bot", "ops"))
    usage = RunUsage(tokens_used=tokens, tainted=tainted)
    return PolicyContext.for_call(call, registry.get(tool), registry_digest="r", usage=usage)


@pytest.mark.parametrize(
    ("tool", "args", "tainted", "tokens"),
    list(itertools.product(TOOLS, ARGS, (False, True), (0, 500))),
)
def test_every_rule_is_reported_as_running_it_would_report_it(
    tool: str, args: dict[str, object], tainted: bool, tokens: int
) -> None:
    policy = parse_policy(POLICY)
    context = _context(tool, args, tainted, tokens)
    ran_all = tuple(_outcome(rule, context) for rule in sorted(policy.rules, key=lambda r: r.id))
    assert explain(context, policy).outcomes == ran_all


def test_a_rule_whose_name_selectors_exclude_the_tool_is_never_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    policy = parse_policy(POLICY)
    context = _context("orders.lookup", {}, False, 0)
    explain(context, policy)  # the index files the tool's candidates once
    ran: list[Match] = []
    real = Match.holds

    def counted(self: Match, context: PolicyContext) -> bool:
        ran.append(self)
        return real(self, context)

    monkeypatch.setattr(Match, "holds", counted)
    explanation = explain(context, policy)
    by_id = {rule.id: rule for rule in policy.rules}
    assert sorted(ran, key=repr) == sorted(
        (by_id[i].match for i in ("glob-orders", "reads", "tainted-writes")), key=repr
    )
    statuses = {o.rule_id: o.status for o in explanation.outcomes}
    assert statuses["email-off"] == "disabled"
    assert statuses["read-notes"] == statuses["fs-any"] == statuses["ns-glob"] == "not_matched"
    assert statuses["glob-orders"] == statuses["reads"] == "matched"


@pytest.mark.parametrize(
    ("tool", "args", "tainted", "tokens"),
    list(itertools.product(TOOLS, ARGS, (False, True), (0, 500))),
)
def test_the_firewalls_decision_with_evidence_is_explains_to_the_last_field(
    tool: str, args: dict[str, object], tainted: bool, tokens: int
) -> None:
    policy = parse_policy(POLICY)
    context = _context(tool, args, tainted, tokens)
    expected = explain(context, policy).decision
    got = explained_decision(context, policy)
    assert (got, got.message, got.evidence) == (expected, expected.message, expected.evidence)


def test_the_firewalls_decision_with_evidence_runs_no_rule_outside_the_candidates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import governance.policy._eval as evaluation

    policy = parse_policy(POLICY)
    context = _context("orders.lookup", {}, False, 0)
    ran: list[str] = []
    real = evaluation._outcome

    def counted(rule: Any, context: PolicyContext) -> Any:
        ran.append(rule.id)
        return real(rule, context)

    monkeypatch.setattr(evaluation, "_outcome", counted)
    decision = explained_decision(context, policy)
    assert ran == ["glob-orders", "reads", "tainted-writes"]
    assert decision.evidence.matched == ("glob-orders", "reads")
