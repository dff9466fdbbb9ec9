"""Pure policy evaluation: compiled rules, one context in, one Decision out. No I/O, no clock.

Every enabled rule that can apply is checked and the outcomes are reduced
block > require_approval > allow, so the order of rules in the file never changes a Decision.
Anything unclear fails closed. Two paths give the same Decision: `evaluate` visits only the
candidates the policy's `RuleIndex` files under the call's tool name and builds nothing else;
`explain` walks every rule and reports how each fared.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import Any, Literal, Protocol, TypeGuard

from governance._canonical import digest as canonical_digest
from governance._contracts import (
    ActionType,
    Decision,
    Effect,
    Impact,
    PolicyContext,
    PolicyEvidence,
    Risk,
    ToolCall,
)
from governance._identity import skeleton
from governance._output_screen import OutputPolicy
from governance._paths import canonical_or_none, is_canonical
from governance._policy_index import RuleIndex
from governance._policy_model import (
    BUDGET_COUNTABLE,
    BUDGET_SCOPES,
    MAX_BUDGET_WINDOW_SECONDS,
    BudgetModel,
    BudgetScope,
    ConditionModel,
    MatchModel,
    PolicyModel,
)

RuleStatus = Literal["matched", "condition_failed", "not_matched", "error", "disabled"]

# Outside string literals and comments, none of these may appear in a read-only query.
SQL_WRITE_WORDS = frozenset(
    """insert update delete drop alter create attach detach pragma replace vacuum reindex
    analyze truncate grant revoke merge upsert exec execute call copy into load_extension
    begin commit rollback savepoint release lock""".split()
)
_SQL_PUNCTUATION = frozenset("(),.*=<>!+-/%|&~:?@;")
_SQL_SPACE = frozenset(" \t\r\n\f")


def is_read_only_sql(sql: str) -> bool:
    """True only for one SELECT (or WITH ... SELECT) statement that names no writing keyword.

    Deliberately conservative: anything a dialect might read differently (backslashes in
    literals, `#`, `$`, brackets, unterminated quotes or comments) is refused.
    """
    code = _sql_code(sql)
    if code is None:
        return False
    body = code.strip()
    if body.endswith(";"):
        body = body[:-1].rstrip()
    if not body or ";" in body:
        return False
    for ch in body:
        if not (ch in _SQL_SPACE or ch in _SQL_PUNCTUATION or ch == "_" or ch.isalnum()):
            return False
    first = re.search(r"\w", body)
    if first is None or body[: first.start()].strip("( \t\r\n\f"):
        return False
    words = {w.lower() for w in re.findall(r"\w+", body)}
    words |= {w.lower() for w in re.findall(r"[A-Za-z_]+", body)}
    head = re.match(r"\w+", body[first.start() :])
    if head is None or head.group().lower() not in ("select", "with"):
        return False
    return "select" in words and not (words & SQL_WRITE_WORDS)


def _sql_code(sql: str) -> str | None:
    """`sql` with literals, quoted identifiers and comments blanked out; None if malformed."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"`":
            j = i + 1
            while True:
                k = sql.find(ch, j)
                if k == -1:
                    return None
                if k + 1 < n and sql[k + 1] == ch:  # a doubled quote is an escaped quote
                    j = k + 2
                    continue
                break
            if "\\" in sql[i + 1 : k]:
                return None
            out.append(" 0 ")
            i = k + 1
        elif sql.startswith("--", i):
            k = sql.find("\n", i)
            i = n if k == -1 else k + 1
            out.append(" ")
        elif sql.startswith("/*", i):
            k = sql.find("*/", i + 2)
            if k == -1:
                return None
            i = k + 2
            out.append(" ")
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _is_number(value: object) -> TypeGuard[int | float]:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return not (isinstance(value, float) and not math.isfinite(value))


class Check(Protocol):
    """One compiled check kind. A value of the wrong shape fails whether negated or not."""

    def test(self, value: object, *, negate: bool) -> bool: ...

    def describe(self) -> str: ...


@dataclass(frozen=True, slots=True)
class PathPrefixCheck:
    prefix: str  # canonical, no trailing slash
    # Derived once here rather than per call: `prefix/` and the case-folded pair.
    _below: str = field(init=False, repr=False, compare=False)
    _folded: str = field(init=False, repr=False, compare=False)
    _folded_below: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        folded = self.prefix.casefold()
        object.__setattr__(self, "_below", self.prefix + "/")
        object.__setattr__(self, "_folded", folded)
        object.__setattr__(self, "_folded_below", folded + "/")

    def test(self, value: object, *, negate: bool) -> bool:
        # Only a canonical path is judged: the firewall canonicalises declared path arguments
        # before the decision and hands the tool that same string. Any other spelling (an
        # undeclared argument, `a/../b`, a backslash) fails the check whether negated or not,
        # so the policy never judges a path that something else would read differently.
        if not is_canonical(value):
            return False
        assert isinstance(value, str)
        if negate:
            # Case-folded so `Secrets/x` cannot slip past "not under secrets/" on a
            # case-insensitive filesystem; the positive test stays exact, the stricter way.
            folded = value.casefold()
            return not (folded == self._folded or folded.startswith(self._folded_below))
        return value == self.prefix or value.startswith(self._below)

    def describe(self) -> str:
        return f"under {self.prefix}/"


@dataclass(frozen=True, slots=True)
class RegexCheck:
    pattern: re.Pattern[str]

    def test(self, value: object, *, negate: bool) -> bool:
        if not isinstance(value, str):
            return False
        return (self.pattern.fullmatch(value) is not None) != negate

    def describe(self) -> str:
        return f"matches /{self.pattern.pattern}/"


def _same_scalar(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    return _is_number(a) and _is_number(b) and a == b


@dataclass(frozen=True, slots=True)
class EnumCheck:
    values: tuple[str | int | float | bool, ...]

    def test(self, value: object, *, negate: bool) -> bool:
        if not (isinstance(value, str | bool) or _is_number(value)):
            return False
        return any(_same_scalar(value, v) for v in self.values) != negate

    def describe(self) -> str:
        return "in [" + ", ".join(repr(v) for v in self.values) + "]"


@dataclass(frozen=True, slots=True)
class MaxLengthCheck:
    limit: int

    def test(self, value: object, *, negate: bool) -> bool:
        if not isinstance(value, str | list | tuple):
            return False
        return (len(value) <= self.limit) != negate

    def describe(self) -> str:
        return f"length <= {self.limit}"


@dataclass(frozen=True, slots=True)
class BoundsCheck:
    minimum: int | float | None
    maximum: int | float | None

    def test(self, value: object, *, negate: bool) -> bool:
        if not _is_number(value):
            return False
        inside = (self.minimum is None or value >= self.minimum) and (
            self.maximum is None or value <= self.maximum
        )
        return inside != negate

    def describe(self) -> str:
        low = "-inf" if self.minimum is None else str(self.minimum)
        high = "inf" if self.maximum is None else str(self.maximum)
        return f"in [{low}, {high}]"


@dataclass(frozen=True, slots=True)
class SqlReadOnlyCheck:
    def test(self, value: object, *, negate: bool) -> bool:
        if not isinstance(value, str):
            return False
        return is_read_only_sql(value) != negate

    def describe(self) -> str:
        return "read-only SQL"


@dataclass(frozen=True, slots=True)
class Condition:
    """A compiled `when` entry. Missing or unjudgeable values always fail closed.

    For an `allow` rule that means the condition fails (the allow does not apply). For a
    restrictive rule (`block`, `require_approval`) a value that is present but cannot be judged
    — neither the check nor its negation holds: an absolute or escaping path, a case-variant
    of a prefix, a wrong type — makes the condition HOLD, so `/srv/secrets/k` or `Secrets/k`
    cannot slip past "block under secrets/". An absent argument is not applicable.
    """

    arg: str
    check: Check
    negate: bool = False
    restrictive: bool = False

    def holds(self, arguments: Mapping[str, Any]) -> bool:
        if self.arg not in arguments:
            return False
        value = arguments[self.arg]
        if self.check.test(value, negate=self.negate):
            return True
        return self.restrictive and not self.check.test(value, negate=not self.negate)

    def describe(self) -> str:
        text = f"{self.arg} {self.check.describe()}"
        return f"NOT({text})" if self.negate else text


@dataclass(frozen=True, slots=True)
class Match:
    """Compiled selectors; None means "not constrained"."""

    tool: tuple[str, ...] | None = None
    namespace: tuple[str, ...] | None = None
    source: tuple[str, ...] | None = None
    action_type: tuple[ActionType, ...] | None = None
    risk: tuple[Risk, ...] | None = None
    impact: tuple[Impact, ...] | None = None
    min_tokens_used: int | None = None
    tainted: bool | None = None

    def holds(self, context: PolicyContext) -> bool:
        tool = context.tool
        if self.tool is not None and not any(fnmatchcase(tool, p) for p in self.tool):
            return False
        if self.namespace is not None:
            namespace = tool.rsplit(".", 1)[0] if "." in tool else ""
            if not any(fnmatchcase(namespace, p) for p in self.namespace):
                return False
        if self.source is not None and context.source not in self.source:
            return False
        if self.action_type is not None and context.action_type not in self.action_type:
            return False
        if self.risk is not None and context.risk not in self.risk:
            return False
        if self.impact is not None and context.impact not in self.impact:
            return False
        if self.min_tokens_used is not None and not context.tokens_used >= self.min_tokens_used:
            return False
        return self.tainted is None or bool(context.tainted) is self.tainted

    def describe(self) -> str:
        parts = []
        for name in ("tool", "namespace", "source", "action_type", "risk", "impact"):
            values = getattr(self, name)
            if values is not None:
                parts.append(f"{name}={'|'.join(values)}")
        if self.min_tokens_used is not None:
            parts.append(f"tokens>={self.min_tokens_used}")
        if self.tainted is not None:
            parts.append(f"tainted={str(self.tainted).lower()}")
        return " ".join(parts) or "(every call)"


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    description: str
    effect: Effect
    enabled: bool
    match: Match
    when: tuple[Condition, ...] = ()

    @property
    def uses_token_budget(self) -> bool:
        return self.match.min_tokens_used is not None

    def first_failing(self, arguments: Mapping[str, Any]) -> Condition | None:
        for condition in self.when:
            if not condition.holds(arguments):
                return condition
        return None


@dataclass(frozen=True, slots=True)
class Defaults:
    unknown_tool: Literal["block", "require_approval"] = "block"
    no_match: Literal["block"] = "block"


@dataclass(frozen=True, slots=True)
class Budget:
    """A compiled budget: at most `limit` counted calls per scope key in a sliding window.

    Pure data; the counting lives in `governance._budgets.BudgetStore`. Empty `tools` means
    every tool. A read never counts: `counts` cannot name it.
    """

    id: str
    description: str
    scope: BudgetScope
    limit: int
    window_seconds: int
    counts: tuple[Impact, ...] = ("destructive",)
    tools: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.scope not in BUDGET_SCOPES:
            raise ValueError(f"budget {self.id!r}: unknown scope {self.scope!r}")
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1:
            raise ValueError(f"budget {self.id!r}: limit must be an integer >= 1")
        window = self.window_seconds
        if isinstance(window, bool) or not isinstance(window, int):
            raise ValueError(f"budget {self.id!r}: window_seconds must be an integer")
        if not 0 < window <= MAX_BUDGET_WINDOW_SECONDS:
            raise ValueError(
                f"budget {self.id!r}: window_seconds must be in 1..{MAX_BUDGET_WINDOW_SECONDS}"
            )
        if not self.counts or any(impact not in BUDGET_COUNTABLE for impact in self.counts):
            raise ValueError(
                f"budget {self.id!r}: counts must be a non-empty subset of "
                f"{list(BUDGET_COUNTABLE)} (a read never counts)"
            )

    def applies_to(self, tool: str, impact: Impact) -> bool:
        """Whether a call of `tool` with this effective impact is charged to this budget."""
        if impact not in self.counts:
            return False
        return not self.tools or any(fnmatchcase(tool, glob) for glob in self.tools)

    def key_for(self, call: ToolCall) -> str:
        """The scope value the call is counted under: run id, actor, agent, team or tool."""
        if self.scope == "agent_run":
            return call.run_id
        if self.scope == "actor":
            return self.scope_key(call.principal.actor)
        if self.scope == "agent":
            return self.scope_key(call.principal.agent)
        if self.scope == "team":
            return self.scope_key(call.principal.team)
        return call.tool

    def scope_key(self, value: str) -> str:
        """The key `value` is counted under. People (actor, agent, team) are keyed by their
        identity skeleton, so `Alice`, `ａlice` or `alice\u200b` cannot open a fresh budget."""
        if self.scope in ("actor", "agent", "team"):
            return skeleton(value)
        return value


@dataclass(frozen=True, slots=True)
class Policy:
    """A compiled, validated policy. `digest` ignores formatting, comments and rule order."""

    rules: tuple[Rule, ...]
    defaults: Defaults
    digest: str
    path: str | None = None
    budgets: tuple[Budget, ...] = ()
    outputs: OutputPolicy = OutputPolicy()
    # Derived from `rules` on every construction (`dataclasses.replace` included), never given.
    index: RuleIndex = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ids = [rule.id for rule in self.rules]
        if not ids or len(set(ids)) != len(ids):
            raise ValueError("a policy needs at least one rule and unique rule ids")
        budget_ids = [budget.id for budget in self.budgets]
        if len(set(budget_ids)) != len(budget_ids):
            raise ValueError("budget ids must be unique")
        object.__setattr__(self, "index", RuleIndex(self.rules))

    @property
    def rule_ids(self) -> tuple[str, ...]:
        return tuple(rule.id for rule in self.rules)


def _compile_condition(model: ConditionModel, *, restrictive: bool) -> Condition:
    check: Check
    if model.path_prefix is not None:
        prefix = canonical_or_none(model.path_prefix)
        if prefix is None or prefix == ".":  # the model already refuses these
            raise ValueError(f"unusable path_prefix {model.path_prefix!r}")
        check = PathPrefixCheck(prefix)
    elif model.regex is not None:
        check = RegexCheck(re.compile(model.regex))
    elif model.enum is not None:
        check = EnumCheck(tuple(model.enum))
    elif model.max_length is not None:
        check = MaxLengthCheck(model.max_length)
    elif model.min is not None or model.max is not None:
        check = BoundsCheck(model.min, model.max)
    elif model.sql_read_only:
        check = SqlReadOnlyCheck()
    else:  # the model already refuses a condition without a check
        raise ValueError(f"condition on {model.arg!r} has no check")
    return Condition(arg=model.arg, check=check, negate=model.negate, restrictive=restrictive)


def _tuple(values: list[Any] | None) -> tuple[Any, ...] | None:
    return None if values is None else tuple(values)


def _compile_match(model: MatchModel) -> Match:
    return Match(
        tool=_tuple(model.tool),
        namespace=_tuple(model.namespace),
        source=_tuple(model.source),
        action_type=_tuple(model.action_type),
        risk=_tuple(model.risk),
        impact=_tuple(model.impact),
        min_tokens_used=model.min_tokens_used,
        tainted=model.tainted,
    )


def policy_digest(model: PolicyModel) -> str:
    """sha256 of the canonical JSON dump with rules and budgets sorted by id.

    Order never changes it, and a policy without budgets keeps the digest it had before
    budgets existed.
    """
    dump = model.model_dump(mode="json", exclude_none=True)
    dump["rules"] = sorted(dump["rules"], key=lambda rule: rule["id"])
    if dump.get("budgets"):
        dump["budgets"] = sorted(dump["budgets"], key=lambda budget: budget["id"])
    else:
        dump.pop("budgets", None)
    return canonical_digest(dump)


def _compile_budget(model: BudgetModel) -> Budget:
    return Budget(
        id=model.id,
        description=model.description,
        scope=model.scope,
        limit=model.limit,
        window_seconds=model.window_seconds,
        counts=tuple(model.counts),
        tools=tuple(model.tools or ()),
    )


def compile_policy(model: PolicyModel, path: str | None = None) -> Policy:
    """Turn a validated model into the engine's frozen form."""
    rules = tuple(
        Rule(
            id=rule.id,
            description=rule.description,
            effect=rule.effect,
            enabled=rule.enabled,
            match=_compile_match(rule.match),
            when=tuple(
                _compile_condition(c, restrictive=rule.effect != "allow") for c in rule.when
            ),
        )
        for rule in model.rules
    )
    defaults = Defaults(unknown_tool=model.defaults.unknown_tool, no_match=model.defaults.no_match)
    return Policy(
        rules=rules,
        defaults=defaults,
        digest=policy_digest(model),
        path=path,
        budgets=tuple(_compile_budget(budget) for budget in model.budgets),
        outputs=OutputPolicy.from_model(model.outputs),
    )


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
    """`_decide` over per-rule outcomes (the complete path)."""
    by_id = {rule.id: rule for rule in policy.rules}
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
    for index, outcome in enumerate(outcomes):
        if outcome.status in ("not_matched", "disabled"):
            continue
        if outcome.status in ("matched", "error"):
            matched.append(outcome.rule_id)
        without = (*outcomes[:index], replace(outcome, status="disabled"), *outcomes[index + 1 :])
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
    evidence (matched and decisive rules and conditions) that coverage is measured from."""
    by_id = {rule.id: rule for rule in policy.rules}
    outcomes = tuple(_outcome(by_id[rule_id], context) for rule_id in sorted(by_id))
    decision = _decide_outcomes(outcomes, context, policy)
    decision = replace(decision, evidence=_evidence(outcomes, decision, context, policy))
    return Explanation(decision=decision, outcomes=outcomes)


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
