"""A validated policy model compiled into the engine's frozen form, with its rule index.

`Policy` is what the firewall decides under: rules, defaults, budgets, output handling, the
content digest, and the `RuleIndex` built once here so a decision visits only candidates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from governance.arguments._paths import canonical_or_none
from governance.core._canonical import digest as canonical_digest
from governance.policy._index import RuleIndex
from governance.policy._model import (
    BudgetModel,
    ConditionModel,
    MatchModel,
    PolicyModel,
    compile_policy_regex,
)
from governance.policy._rules import (
    BoundsCheck,
    Budget,
    Check,
    Condition,
    Defaults,
    EnumCheck,
    Match,
    MaxLengthCheck,
    PathPrefixCheck,
    RegexCheck,
    Rule,
    SqlReadOnlyCheck,
    UrlHostCheck,
)
from governance.screening._output_secrets import OutputPolicy


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
        check = RegexCheck(
            compile_policy_regex(model.regex), compile_policy_regex(model.regex, ascii_only=True)
        )
    elif model.enum is not None:
        check = EnumCheck(tuple(model.enum))
    elif model.max_length is not None:
        check = MaxLengthCheck(model.max_length)
    elif model.min is not None or model.max is not None:
        check = BoundsCheck(model.min, model.max)
    elif model.sql_read_only:
        check = SqlReadOnlyCheck()
    elif model.url_host is not None:
        check = UrlHostCheck(tuple(model.url_host))
    else:  # the model already refuses a condition without a check
        raise ValueError(f"condition on {model.arg!r} has no check")
    return Condition(
        arg=model.arg,
        check=check,
        negate=model.negate,
        restrictive=restrictive,
        items=model.items,
    )


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
