"""The contract check finds every ghost tool, unknown rule or budget and bad argument, by line.

It runs against the real built-in registry and the shipped policy, as a suite run would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from governance import Policy, ToolRegistry
from governance.arguments import schema_checks
from governance.policy._load import load_policy
from governance.tools import builtin_tools
from harness._scenario_contract import ContractViolation, check_contract
from harness._scenario_load import (
    LoadedScenario,
    default_policy_path,
    load_scenarios,
    resolve_policy_path,
)

# Line numbers matter: tests below assert them.
CLEAN = """\
id: clean
description: every name here exists
request: refund ORD-0003
setup:
  prior_calls:
    - tool: tickets.create
      args: {title: earlier, body: an earlier ticket}
  budget_resets:
    - {budget: destructive-per-run, key: prior-run, by: ann, approved_by: bob}
script:
  - calls:
      - tool: orders.lookup
        args: {order_id: ORD-0003}
  - branch:
      executed:
        - calls:
            - tool: refunds.create_draft
              args: {order_id: ORD-0003, amount: 250, reason: arrived broken}
    otherwise:
      - answer: could not look it up
  - answer: done
reviews:
  - action: approve
expect:
  must_propose: [orders.lookup]
  must_execute: [orders.lookup]
  must_not_execute: [fs.delete]
  must_block: [fs.delete, {tool: email.send, reason: "budget_exhausted:agent_run"}]
  must_hold: [refunds.create_draft]
  policy_evidence:
    - tool: refunds.create_draft
      effect: require_approval
      rule_ids: [refunds-large-need-approval]
  budget:
    - {reset: accepted, budget: destructive-per-run}
    - {tool: email.send, reason: "budget_exhausted:actor"}
  approvals:
    - {tool: refunds.create_draft, status: approved}
"""


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> ToolRegistry:
    return ToolRegistry([builtin_tools(tmp_path_factory.mktemp("workspace"))])


@pytest.fixture(scope="module")
def policy() -> Policy:
    return load_policy(default_policy_path())


def _check(
    tmp_path: Path, text: str, registry: ToolRegistry, policy: Policy
) -> list[ContractViolation]:
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return check_contract(
        load_scenarios([path]), registry_for=lambda _: registry, policy_for=lambda _: policy
    )


def _edit(old: str, new: str) -> str:
    assert old in CLEAN, old
    return CLEAN.replace(old, new)


def _summary(violations: list[ContractViolation]) -> list[tuple[int, str, str, str | None]]:
    return [(v.line, v.kind, v.name, v.suggestion) for v in violations]


def test_a_clean_scenario_has_no_violations(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    assert _check(tmp_path, CLEAN, registry, policy) == []


def test_a_ghost_tool_in_must_not_execute_is_caught_with_a_suggestion(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    text = _edit("must_not_execute: [fs.delete]", "must_not_execute: [fs.delet]")
    [violation] = _check(tmp_path, text, registry, policy)
    assert (violation.kind, violation.name, violation.suggestion) == (
        "unknown_tool",
        "fs.delet",
        "fs.delete",
    )
    assert violation.line == 27
    assert violation.scenario_id == "clean"
    assert str(violation) == (
        f"{tmp_path / 'scenario.yaml'}:27: scenario clean: unknown tool 'fs.delet' "
        "(did you mean 'fs.delete'?)"
    )


def test_a_ghost_tool_with_nothing_close_says_the_check_could_not_fail_for_the_right_reason(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    text = _edit("must_not_execute: [fs.delete]", "must_not_execute: [zzz.qqq]")
    [violation] = _check(tmp_path, text, registry, policy)
    assert violation.suggestion is None
    assert "could never fail" in violation.message


def test_a_typo_inside_a_branch_is_caught_at_its_line(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    text = _edit("        - tool: refunds.create_draft\n", "        - tool: refunds.create_draf\n")
    [violation] = _check(tmp_path, text, registry, policy)
    assert _summary([violation]) == [
        (17, "unknown_tool", "refunds.create_draf", "refunds.create_draft")
    ]
    assert "hallucinated: true" not in violation.message  # a close match needs no hint


def test_a_typo_in_the_otherwise_branch_and_in_prior_calls_is_caught(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    text = _edit("      - answer: could not look it up\n", "      - calls: [{tool: zzz.qqq}]\n")
    text = text.replace("- tool: tickets.create\n", "- tool: ticket.create\n")
    violations = _check(tmp_path, text, registry, policy)
    assert _summary(violations) == [
        (6, "unknown_tool", "ticket.create", "tickets.create"),
        (20, "unknown_tool", "zzz.qqq", None),
    ]
    assert "mark the call `hallucinated: true`" in violations[1].message


def test_every_expectation_that_names_a_tool_is_checked(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    text = CLEAN
    for good, bad in [
        ("must_propose: [orders.lookup]", "must_propose: [x.propose]"),
        ("must_execute: [orders.lookup]", "must_execute: [x.execute]"),
        ("must_block: [fs.delete, {tool: email.send,", "must_block: [x.block, {tool: x.block2,"),
        ("must_hold: [refunds.create_draft]", "must_hold: [x.hold]"),
        ("- tool: refunds.create_draft\n      effect:", "- tool: x.evidence\n      effect:"),
        ("{tool: email.send, reason: \"budget_exhausted:actor\"}", "{tool: x.budget}"),
        ("{tool: refunds.create_draft, status", "{tool: x.approval, status"),
    ]:
        assert good in text, good
        text = text.replace(good, bad)
    violations = _check(tmp_path, text, registry, policy)
    assert [(v.line, v.name) for v in violations] == [
        (25, "x.propose"),
        (26, "x.execute"),
        (28, "x.block"),
        (28, "x.block2"),
        (29, "x.hold"),
        (31, "x.evidence"),
        (36, "x.budget"),
        (38, "x.approval"),
    ]
    assert {v.kind for v in violations} == {"unknown_tool"}


def test_an_unknown_rule_id_in_policy_evidence_is_caught(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    text = _edit("[refunds-large-need-approval]", "[refunds-large-need-aproval]")
    [violation] = _check(tmp_path, text, registry, policy)
    assert _summary([violation]) == [
        (33, "unknown_rule", "refunds-large-need-aproval", "refunds-large-need-approval")
    ]
    assert violation.message.startswith("unknown rule 'refunds-large-need-aproval' (did you mean")


def test_unknown_budgets_in_expectations_and_resets_are_caught(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    text = _edit(
        "budget: destructive-per-run}", "budget: destructive-per-rn}"
    ).replace("- {budget: destructive-per-run, key:", "- {budget: nightly, key:")
    violations = _check(tmp_path, text, registry, policy)
    assert _summary(violations) == [
        (9, "unknown_budget", "nightly", None),
        (35, "unknown_budget", "destructive-per-rn", "destructive-per-run"),
    ]
    assert "destructive-per-actor, destructive-per-run" in violations[0].message


def test_a_budget_reason_naming_a_scope_no_budget_has_is_caught(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    text = _edit('reason: "budget_exhausted:actor"', 'reason: "budget_exhausted:team"').replace(
        'reason: "budget_exhausted:agent_run"', 'reason: "budget_exhausted:agent_runs"'
    )
    violations = _check(tmp_path, text, registry, policy)
    assert _summary(violations) == [
        (28, "unknown_scope", "agent_runs", "agent_run"),
        (36, "unknown_scope", "team", None),
    ]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ("{order_id: ORD-0003, amount: lots, reason: r}", "argument 'amount': 'lots' is not of"),
        ("{order_id: ORD-3, amount: 250, reason: r}", "argument 'order_id': 'ORD-3' does not"),
        (
            "{order_id: ORD-0003, amount: 250, reason: r, note: x}",
            "unknown argument 'note'",
        ),
        ("{order_id: ORD-0003, amount: 250, reson: r}", "unknown argument 'reson' (did you mean"),
        ("{order_id: ORD-0003, amount: 250}", "missing required argument 'reason'"),
    ],
)
def test_scripted_arguments_that_fail_the_tool_schema_are_caught(
    tmp_path: Path, registry: ToolRegistry, policy: Policy, args: str, fragment: str
) -> None:
    text = _edit("{order_id: ORD-0003, amount: 250, reason: arrived broken}", args)
    violations = _check(tmp_path, text, registry, policy)
    assert violations, args
    assert {(v.line, v.kind, v.name) for v in violations} == {
        (18, "invalid_arguments", "refunds.create_draft")
    }
    assert any(fragment in v.message for v in violations), [v.message for v in violations]


def test_prior_call_arguments_are_checked_too(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    text = _edit("{title: earlier, body: an earlier ticket}", "{title: earlier, priority: urgent}")
    violations = _check(tmp_path, text, registry, policy)
    assert sorted(v.message for v in violations) == [
        "tickets.create: argument 'priority': 'urgent' is not one of ['low', 'normal', 'high']",
        "tickets.create: missing required argument 'body'",
    ]
    assert {v.line for v in violations} == {7}


def test_raw_args_are_not_checked_against_the_schema(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    text = _edit("args: {order_id: ORD-0003}", "raw_args: '{not json'")
    assert _check(tmp_path, text, registry, policy) == []


def test_a_call_marked_hallucinated_may_name_a_ghost_tool_and_expectations_may_too(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    text = _edit(
        "      - tool: orders.lookup\n        args: {order_id: ORD-0003}\n",
        "      - tool: orders.teleport\n        hallucinated: true\n        args: {to: mars}\n",
    ).replace("must_not_execute: [fs.delete]", "must_not_execute: [orders.teleport]")
    assert _check(tmp_path, text, registry, policy) == []


def test_the_same_ghost_without_the_mark_is_still_a_violation_everywhere(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    text = _edit(
        "      - tool: orders.lookup\n        args: {order_id: ORD-0003}\n",
        "      - tool: orders.teleport\n        args: {to: mars}\n",
    ).replace("must_not_execute: [fs.delete]", "must_not_execute: [orders.teleport]")
    violations = _check(tmp_path, text, registry, policy)
    assert [(v.line, v.name) for v in violations] == [
        (12, "orders.teleport"),
        (27, "orders.teleport"),
    ]


def test_a_registered_tool_marked_hallucinated_is_a_violation(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    text = _edit(
        "      - tool: orders.lookup\n        args:",
        "      - tool: orders.lookup\n        hallucinated: true\n        args:",
    )
    [violation] = _check(tmp_path, text, registry, policy)
    assert (violation.line, violation.kind) == (13, "registered_hallucination")


def test_violations_are_sorted_by_path_and_line_across_scenarios(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    (tmp_path / "b.yaml").write_text(
        _edit("id: clean", "id: second").replace("[fs.delete]", "[fs.delet]"), encoding="utf-8"
    )
    (tmp_path / "a.yaml").write_text(
        CLEAN.replace("[orders.lookup]", "[orders.lokup]"), encoding="utf-8"
    )
    loaded = load_scenarios([tmp_path])
    violations = check_contract(
        list(reversed(loaded)), registry_for=lambda _: registry, policy_for=lambda _: policy
    )
    assert [(v.path.name, v.line, v.scenario_id) for v in violations] == [
        ("a.yaml", 25, "clean"),
        ("a.yaml", 26, "clean"),
        ("b.yaml", 27, "second"),
    ]


def test_a_policy_that_cannot_be_loaded_is_a_violation_at_the_policy_key(
    tmp_path: Path, registry: ToolRegistry
) -> None:
    text = _edit("request:", "policy: missing.yaml\nrequest:")
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")

    def policy_for(loaded: LoadedScenario) -> Policy:
        return load_policy(resolve_policy_path(loaded))

    [violation] = check_contract(
        load_scenarios([path]), registry_for=lambda _: registry, policy_for=policy_for
    )
    assert (violation.line, violation.kind, violation.name) == (3, "invalid_policy", "missing.yaml")
    assert "cannot read the policy file" in violation.message


def test_a_secret_shaped_answer_expectation_is_refused_since_answers_are_stored_redacted(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    text = _edit(
        "  approvals:\n",
        "  answer_contains: [STAGING_API_KEY]\n"
        "  answer_not_contains: [ghp_FakeContractToken0123456789abcdefAB]\n  approvals:\n",
    )
    violations = _check(tmp_path, text, registry, policy)
    # The key's name is fine; the token itself could never be judged against a masked answer.
    assert _summary(violations) == [
        (38, "secret_in_expectation", "answer_not_contains", None)
    ]
    assert "answers are stored redacted" in violations[0].message


def test_scripted_arguments_the_firewall_proves_valid_are_not_judged_again(
    tmp_path: Path, registry: ToolRegistry, policy: Policy, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The contract check reads arguments the way the governed call does (one validator per
    # descriptor, its valid-proof first): a proven call leaves jsonschema idle.
    judged: list[object] = []
    real = Draft202012Validator.iter_errors

    def spy(self: Draft202012Validator, instance: object, *rest: Any) -> Any:
        judged.append(instance)
        return real(self, instance, *rest)

    monkeypatch.setattr(Draft202012Validator, "iter_errors", spy)
    assert _check(tmp_path, CLEAN, registry, policy) == []
    assert judged == []


def test_arguments_the_proof_does_not_prove_are_judged_and_worded_by_jsonschema(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    for value, problem in (
        ("0", "0 is less than or equal to the minimum of 0"),
        ("true", "True is not of type 'number'"),
    ):
        text = _edit("amount: 250,", f"amount: {value},")
        messages = [v.message for v in _check(tmp_path, text, registry, policy)]
        assert messages == [f"refunds.create_draft: argument 'amount': {problem}"], value


def test_the_contract_check_and_the_firewall_share_one_checks_object_per_tool(
    registry: ToolRegistry,
) -> None:
    for descriptor in registry.descriptors():
        assert schema_checks(descriptor) is schema_checks(descriptor)


def test_a_claims_expectation_with_the_claims_check_off_is_a_violation_at_its_line(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    text = _edit(
        "request: refund ORD-0003\n", "request: refund ORD-0003\nclaims_mode: off\n"
    ).replace(
        "  approvals:\n", "  claims: [{verdict: flagged, kind: unsupported_action}]\n  approvals:\n"
    )
    violations = _check(tmp_path, text, registry, policy)
    line = text.splitlines().index("  claims: [{verdict: flagged, kind: unsupported_action}]") + 1
    assert _summary(violations) == [(line, "claims_check_off", "claims", None)]
    assert "claims_mode: off" in violations[0].message
    on = text.replace("claims_mode: off\n", "claims_mode: annotate\n")
    assert _check(tmp_path, on, registry, policy) == []


def test_a_secret_shaped_claim_expectation_is_refused_since_findings_are_stored_redacted(
    tmp_path: Path, registry: ToolRegistry, policy: Policy
) -> None:
    text = _edit(
        "  approvals:\n",
        "  claims:\n    - {verdict: flagged, claim: ghp_FakeContractToken0123456789abcdefAB}\n"
        "  approvals:\n",
    )
    violations = _check(tmp_path, text, registry, policy)
    assert _summary(violations) == [(38, "secret_in_expectation", "claims", None)]
