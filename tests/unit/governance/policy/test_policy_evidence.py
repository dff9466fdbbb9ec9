"""The evidence `explain()` puts on a Decision: matched rules, decisive rules and conditions."""

from __future__ import annotations

from governance import PolicyContext, Principal, ToolCall
from governance.policy._eval import explain
from governance.policy._load import parse_policy
from harness._suite import builtin_registry

POLICY = """
version: 1
rules:
  - id: notes-read
    effect: allow
    match: {tool: fs.read}
    when: [{arg: path, path_prefix: notes/}]
  - id: all-reads
    effect: allow
    match: {action_type: [read]}
  - id: no-secrets
    effect: block
    match: {namespace: fs}
    when: [{arg: path, path_prefix: secrets/}]
  - id: writes-reports
    effect: allow
    match: {tool: fs.write}
    when:
      - {arg: path, path_prefix: reports/}
      - {arg: content, max_length: 10}
"""


def _evidence(tool: str, args: dict[str, object]) -> tuple[tuple[str, ...], ...]:
    registry = builtin_registry()
    call = ToolCall("c1", tool, args, "run", Principal("ann", "bot", "ops"))
    context = PolicyContext.for_call(call, registry.get(tool), registry_digest="r")
    evidence = explain(context, parse_policy(POLICY)).decision.evidence
    return evidence.matched, evidence.decisive, evidence.conditions


def test_a_blanket_allow_that_only_agrees_with_another_allow_is_not_decisive() -> None:
    matched, decisive, conditions = _evidence("fs.read", {"path": "notes/a.txt"})
    assert matched == ("all-reads", "notes-read")
    assert decisive == ()  # either allow alone still allows: neither decides
    assert conditions == ("no-secrets.when[0]:failed", "notes-read.when[0]:held")


def test_the_only_allow_that_applies_is_decisive() -> None:
    matched, decisive, _ = _evidence("fs.list", {"path": "reports"})
    assert matched == ("all-reads",)
    assert decisive == ("all-reads",)


def test_a_block_is_decisive_and_the_allows_it_overrides_are_matched_but_not_decisive() -> None:
    matched, decisive, conditions = _evidence("fs.read", {"path": "secrets/k"})
    assert matched == ("all-reads", "no-secrets")
    assert decisive == ("no-secrets",)
    assert "no-secrets.when[0]:held" in conditions
    assert "notes-read.when[0]:failed" in conditions


def test_a_failed_condition_is_decisive_only_when_every_other_condition_held() -> None:
    # path fails and content holds: flipping path alone would make the rule apply.
    _, decisive, conditions = _evidence("fs.write", {"path": "notes/x", "content": "short"})
    assert conditions == ("no-secrets.when[0]:failed", "writes-reports.when[0]:failed")
    # Disabling writes-reports leaves the same block and reason (no-secrets failed on `path`
    # too, so it is still invalid_argument:path): the rule is not decisive for this call.
    assert decisive == ()
    # Both fail: flipping one alone changes nothing, so neither is decisive.
    _, _, both = _evidence("fs.write", {"path": "notes/x", "content": "far too long content"})
    assert both == ("no-secrets.when[0]:failed",)


def test_a_rule_whose_selectors_do_not_hold_is_neither_matched_nor_decisive() -> None:
    matched, decisive, conditions = _evidence("orders.lookup", {"order_id": "o"})
    assert "notes-read" not in matched + decisive
    assert not [c for c in conditions if c.startswith(("notes-read", "writes-reports"))]
