"""Pure policy evaluation: compiled rules, one context in, one Decision out. No I/O, no clock.

Every enabled rule that can apply is checked and the outcomes are reduced
block > require_approval > allow, so the order of rules in the file never changes a Decision.
Anything unclear fails closed. Two paths give the same Decision: `evaluate` visits only the
candidates the policy's `RuleIndex` files under the call's tool name and builds nothing else;
`explain` walks every rule and reports how each fared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from governance.core._contracts import (
    Decision,
    Effect,
    PolicyContext,
    PolicyEvidence,
)
from governance.policy._compile import Policy
from governance.policy._rules import (
    Rule,
)

RuleStatus = Literal["matched", "condition_failed", "not_matched", "error", "disabled"]


@dataclass(frozen=True, slots=True)
class RuleOutcome:
    """How one rule fared against one context (for `proctor policy explain` and audits).

    `conditions` holds every condition's result when the selectors held (none short-circuit),
    so the evidence can say which condition was decisive.
    """

    rule_id: str
    effect: Effect
    status: RuleStatus
    failed_arg: str | None = None
    error: str | None = None
    conditions: tuple[bool, ...] = ()


@dataclass(frozen=True, slots=True)
class Explanation:
    decision: Decision
    outcomes: tuple[RuleOutcome, ...]  # sorted by rule id

    @property
    def matched_rule_ids(self) -> tuple[str, ...]:
        """Every rule that applied, whatever its effect (a rule that raised counts as a block)."""
        return tuple(o.rule_id for o in self.outcomes if o.status in ("matched", "error"))


def _outcome(rule: Rule, context: PolicyContext) -> RuleOutcome:
    if not rule.enabled:
        return RuleOutcome(rule.id, rule.effect, "disabled")
    try:
        if not rule.match.holds(context):
            return RuleOutcome(rule.id, rule.effect, "not_matched")
    except Exception as exc:  # fail closed: a rule that cannot be evaluated blocks
        return RuleOutcome(rule.id, "block", "error", error=type(exc).__name__)
    # Every condition is evaluated (the evidence says which was decisive), but the verdict is
    # the short-circuit one the fast path gives: a condition that raises after an earlier one
    # failed changes nothing, and then the evidence for this rule is left incomplete (empty).
    results: list[bool] = []
    for condition in rule.when:
        try:
            results.append(condition.holds(context.arguments))
        except Exception as exc:
            if False in results:
                results = []
                break
            return RuleOutcome(rule.id, "block", "error", error=type(exc).__name__)
    failing = next((c for c, held in zip(rule.when, results, strict=False) if not held), None)
    if failing is None and len(results) < len(rule.when):  # broke off after a failed condition
        failing = rule.first_failing(context.arguments)
    if failing is not None:
        return RuleOutcome(
            rule.id,
            rule.effect,
            "condition_failed",
            failed_arg=failing.arg,
            conditions=tuple(results),
        )
    return RuleOutcome(rule.id, rule.effect, "matched", conditions=tuple(results))


def _about(rules: list[Rule]) -> str:
    label = "rule" if len(rules) == 1 else "rules"
    text = f"{label} {', '.join(r.id for r in rules)}"
    described = next((r.description for r in rules if r.description), "")
    return f"{text}: {described}" if described else text


def _decide(
    context: PolicyContext,
    policy: Policy,
    *,
    blocks: list[Rule],
    errors: list[tuple[Rule, str]],
    holds: list[Rule],
    allows: list[Rule],
    failed: list[tuple[Rule, str]],
) -> Decision:
    """Reduce the rules that applied to one Decision.

    Every list is in rule-id order. `blocks` holds the block rules that matched and every rule
    that raised (it blocks whatever its effect); `errors` those that raised, with the exception
    name; `failed` the rules whose selectors held but a condition did not, with its argument.
    """

    def make(effect: Effect, rule_ids: tuple[str, ...], reason: str, message: str) -> Decision:
        return Decision(
            effect=effect,
            rule_ids=rule_ids,
            reason=reason,
            policy_digest=policy.digest,
            registry_digest=context.registry_digest,
            message=message,
        )

    if blocks:
        ids = tuple(rule.id for rule in blocks)
        if errors:
            names = ", ".join(f"{rule.id} ({error})" for rule, error in errors)
            return make(
                "block",
                ids,
                "rule_error",
                f"blocked: rule {names} failed to evaluate, so it blocks",
            )
        reason = (
            "token_budget_exceeded"
            if any(rule.uses_token_budget for rule in blocks)
            else "blocked_by_rule"
        )
        return make("block", ids, reason, f"blocked by {_about(blocks)}")

    if not context.known:
        effect = policy.defaults.unknown_tool
        verdict = "blocked" if effect == "block" else "held for approval"
        return make(
            effect,
            (),
            "unknown_tool",
            f"tool {context.tool!r} is not registered, so it is {verdict} by default",
        )

    if holds:
        return make(
            "require_approval",
            tuple(rule.id for rule in holds),
            "approval_required",
            f"approval required by {_about(holds)}",
        )

    if allows:
        ids = tuple(rule.id for rule in allows)
        if context.action_type == "unknown":
            return make(
                "require_approval",
                ids,
                "unmapped_tool",
                f"tool {context.tool!r} has no mapped action type, so {_about(allows)} "
                "needs a human approval before it applies",
            )
        return make("allow", ids, "allowed", f"allowed by {_about(allows)}")

    if failed:
        first, arg = failed[0]
        return make(
            policy.defaults.no_match,
            tuple(rule.id for rule, _ in failed),
            f"invalid_argument:{arg}",
            f"argument {arg!r} does not satisfy rule {first.id}, and no other rule "
            f"applies to {context.tool}, so it is blocked by default",
        )
    return make(
        policy.defaults.no_match,
        (),
        "no_matching_rule",
        f"no rule applies to {context.tool}, so it is blocked by default",
    )


def _decide_outcomes(
    outcomes: tuple[RuleOutcome, ...], context: PolicyContext, policy: Policy
) -> Decision:
    """`_decide` over per-rule outcomes (the complete path). A `not_matched` or `disabled`
    outcome counts for nothing, so leaving it out gives the same Decision."""
    by_id = policy.index.by_id
    applied: dict[Effect, list[Rule]] = {"block": [], "require_approval": [], "allow": []}
    errors: list[tuple[Rule, str]] = []
    failed: list[tuple[Rule, str]] = []
    for outcome in outcomes:
        rule = by_id[outcome.rule_id]
        if outcome.status in ("matched", "error"):
            applied[outcome.effect].append(rule)
        if outcome.status == "error":
            errors.append((rule, outcome.error or ""))
        elif outcome.status == "condition_failed":
            failed.append((rule, outcome.failed_arg or ""))
    return _decide(
        context,
        policy,
        blocks=applied["block"],
        errors=errors,
        holds=applied["require_approval"],
        allows=applied["allow"],
        failed=failed,
    )


def _evidence(
    outcomes: tuple[RuleOutcome, ...], decision: Decision, context: PolicyContext, policy: Policy
) -> PolicyEvidence:
    """Matched rules; rules whose absence would change the effect or reason; decisive conditions.

    A rule that did not apply can only matter through the `invalid_argument` reason, so every
    rule with selectors that held is tried disabled; the reduction alone is re-run, never the
    conditions.
    """
    matched: list[str] = []
    decisive: list[str] = []
    conditions: list[str] = []
    # Only these can change a reduction; a rule tried disabled is simply left out of it.
    active = tuple(o for o in outcomes if o.status not in ("not_matched", "disabled"))
    for index, outcome in enumerate(active):
        if outcome.status in ("matched", "error"):
            matched.append(outcome.rule_id)
        without = (*active[:index], *active[index + 1 :])
        other = _decide_outcomes(without, context, policy)
        if (other.effect, other.reason) != (decision.effect, decision.reason):
            decisive.append(outcome.rule_id)
        results = outcome.conditions
        for n, held in enumerate(results):
            if all(results[:n]) and all(results[n + 1 :]):
                conditions.append(f"{outcome.rule_id}.when[{n}]:{'held' if held else 'failed'}")
    return PolicyEvidence(
        matched=tuple(matched), decisive=tuple(decisive), conditions=tuple(conditions)
    )


def explain(context: PolicyContext, policy: Policy) -> Explanation:
    """Evaluate every rule and say how each fared, with the resulting Decision and the
    evidence (matched and decisive rules and conditions) that coverage is measured from.

    A rule the index does not list as a candidate for the tool is reported without being
    run: it is disabled, or its name selectors (which `Match.holds` checks first) do not hold.
    """
    index = policy.index
    tool = context.tool
    if type(tool) is str:
        plan = index.plan(tool, lambda name: _plan(index.ordered, index.candidate_ids(name)))
        outcomes = tuple(
            _outcome(rule, context) if skipped is None else skipped for rule, skipped in plan
        )
    else:  # not a name the index can file: every rule is run
        outcomes = tuple(_outcome(rule, context) for rule in index.ordered)
    verdict = _decide_outcomes(outcomes, context, policy)
    decision = Decision(  # dataclasses.replace(verdict, evidence=...), without its overhead
        effect=verdict.effect,
        rule_ids=verdict.rule_ids,
        reason=verdict.reason,
        policy_digest=verdict.policy_digest,
        registry_digest=verdict.registry_digest,
        message=verdict.message,
        evidence=_evidence(outcomes, verdict, context, policy),
    )
    return Explanation(decision=decision, outcomes=outcomes)


def explained_decision(context: PolicyContext, policy: Policy) -> Decision:
    """`explain(context, policy).decision` (with its evidence), without the per-rule report:
    only the index's candidates are run, since no other rule can change the reduction or
    appear in the evidence. What the firewall decides under when evidence is asked for."""
    tool = context.tool
    if type(tool) is not str:  # not a name the index can file: the complete path judges it
        return explain(context, policy).decision
    outcomes = tuple(_outcome(c.rule, context) for c in policy.index.candidates(tool))
    verdict = _decide_outcomes(outcomes, context, policy)
    return Decision(  # dataclasses.replace(verdict, evidence=...), without its overhead
        effect=verdict.effect,
        rule_ids=verdict.rule_ids,
        reason=verdict.reason,
        policy_digest=verdict.policy_digest,
        registry_digest=verdict.registry_digest,
        message=verdict.message,
        evidence=_evidence(outcomes, verdict, context, policy),
    )


_Plan = tuple[tuple[Rule, "RuleOutcome | None"], ...]


def _plan(ordered: tuple[Rule, ...], chosen: frozenset[str]) -> _Plan:
    """Every rule in id order, with the outcome `_outcome` gives it for any call of a tool
    whose candidates are `chosen` (None: a candidate, run per call)."""
    return tuple((rule, None if rule.id in chosen else _skipped(rule)) for rule in ordered)


def _skipped(rule: Rule) -> RuleOutcome:
    """What `_outcome` gives a rule that is disabled or whose name selectors do not hold."""
    return RuleOutcome(rule.id, rule.effect, "not_matched" if rule.enabled else "disabled")


def evaluate(context: PolicyContext, policy: Policy) -> Decision:
    """The Decision for one proposed call. Pure: the same inputs always give the same output.

    The same Decision as `explain(context, policy).decision`, from the candidate rules alone
    and without a per-rule report.
    """
    tool = context.tool
    if type(tool) is not str:  # not a name the index can file: the complete path judges it
        return explain(context, policy).decision
    arguments = context.arguments
    blocks: list[Rule] = []
    errors: list[tuple[Rule, str]] = []
    holds: list[Rule] = []
    allows: list[Rule] = []
    failed: list[tuple[Rule, str]] = []
    for candidate in policy.index.candidates(tool):
        rule = candidate.rule
        try:
            if candidate.rest is not None and not candidate.rest.holds(context):
                continue
            failing = rule.first_failing(arguments)
        except Exception as exc:  # fail closed: a rule that cannot be evaluated blocks
            blocks.append(rule)
            errors.append((rule, type(exc).__name__))
            continue
        if failing is not None:
            failed.append((rule, failing.arg))
        elif rule.effect == "block":
            blocks.append(rule)
        elif rule.effect == "require_approval":
            holds.append(rule)
        else:
            allows.append(rule)
    return _decide(
        context,
        policy,
        blocks=blocks,
        errors=errors,
        holds=holds,
        allows=allows,
        failed=failed,
    )
