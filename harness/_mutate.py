"""Policy mutation operators and the kill verdict: pure, values in and values out.

A mutant is the policy file's data with one rule or budget weakened. The suite *kills* a
mutant when a check that passes against the real policy fails against the mutant (or a
scenario's contract breaks, or it no longer produces a check it produced): someone weakening
that rule in a pull request would be caught. A *surviving* mutant names a weakening no
scenario notices. Mutation names are stable, so an equivalent mutant (one that cannot change
any behaviour) can be accepted by name in `scenarios/mutants.yaml`, with a reason.
"""

from __future__ import annotations

import copy
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from governance._policy_model import MAX_BUDGET_LIMIT

WIDEN_FACTOR = 1000
_WEAKER_EFFECT = {"block": "require_approval", "require_approval": "allow"}


@dataclass(frozen=True, slots=True)
class Mutant:
    """One weakening of one rule or budget: `target` is `rule:<id>` or `budget:<id>`."""

    target: str
    mutation: str  # stable name: `effect:allow`, `disable`, `when[0]:drop`, `limit:x1000`, ...
    description: str  # what was weakened, in words
    data: Mapping[str, Any]  # the whole mutated policy document

    @property
    def key(self) -> tuple[str, str]:
        return self.target, self.mutation


def mutants_of(policy: Mapping[str, Any]) -> list[Mutant]:
    """Every mutant of a policy document (the parsed YAML), rules then budgets, in file order."""
    out: list[Mutant] = []
    for index, rule in enumerate(policy.get("rules") or []):
        if isinstance(rule, Mapping) and rule.get("enabled", True) is not False:
            out += _rule_mutants(policy, index, rule)
    for index, budget in enumerate(policy.get("budgets") or []):
        if isinstance(budget, Mapping):
            out += _budget_mutants(policy, index, budget)
    return out


def _with_rule(policy: Mapping[str, Any], index: int, rule: Mapping[str, Any]) -> dict[str, Any]:
    data = copy.deepcopy(dict(policy))
    data["rules"][index] = rule
    return data


def _rule_mutants(policy: Mapping[str, Any], index: int, rule: Mapping[str, Any]) -> list[Mutant]:
    target = f"rule:{rule['id']}"
    out: list[Mutant] = []

    def add(mutation: str, description: str, changed: dict[str, Any]) -> None:
        out.append(Mutant(target, mutation, description, _with_rule(policy, index, changed)))

    effect = rule.get("effect")
    weaker = _WEAKER_EFFECT.get(str(effect))
    if weaker is not None:
        add(f"effect:{weaker}", f"effect {effect} -> {weaker}", {**rule, "effect": weaker})
    add("disable", "rule disabled", {**rule, "enabled": False})
    conditions = list(rule.get("when") or [])
    for n, condition in enumerate(conditions):
        if not isinstance(condition, Mapping):
            continue
        rest = conditions[:n] + conditions[n + 1 :]
        add(f"when[{n}]:drop", f"condition when[{n}] on {condition.get('arg')!r} dropped",
            {**rule, "when": rest})  # fmt: skip
        if condition.get("negate"):
            flipped = {k: v for k, v in condition.items() if k != "negate"}
            add(f"when[{n}]:negate-dropped", f"negate dropped from when[{n}]",
                {**rule, "when": [*conditions[:n], flipped, *conditions[n + 1 :]]})  # fmt: skip
        widened = _widen(condition)
        if widened is not None:
            how, wider = widened
            add(f"when[{n}]:widen", f"when[{n}] widened: {how}",
                {**rule, "when": [*conditions[:n], wider, *conditions[n + 1 :]]})  # fmt: skip
    return out


def _widen(condition: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The condition with its check loosened, or None when it has no looser form."""
    prefix = condition.get("path_prefix")
    if isinstance(prefix, str):
        trimmed = prefix.strip("/")
        parent = posixpath.dirname(trimmed)
        if parent:
            return f"path_prefix {prefix} -> {parent}/", {**condition, "path_prefix": parent}
        # A top-level folder has no parent that is a valid prefix: drop its last character,
        # a prefix of siblings (`reports` -> `report`, matching `report/...` too) is the
        # nearest looser spelling the model accepts; shorter names are not tried.
        if len(trimmed) > 1:
            return (
                f"path_prefix {prefix} -> {trimmed[:-1]}/",
                {**condition, "path_prefix": trimmed[:-1]},
            )
        return None
    if isinstance(condition.get("regex"), str) and condition["regex"] != ".*":
        return f"regex {condition['regex']!r} -> '.*'", {**condition, "regex": ".*"}
    if isinstance(condition.get("max"), int | float) and not isinstance(condition["max"], bool):
        high = condition["max"] * WIDEN_FACTOR if condition["max"] > 0 else condition["max"] + 1000
        wider = {**condition, "max": high}
        return f"max {condition['max']} -> {high}", wider
    if isinstance(condition.get("min"), int | float) and not isinstance(condition["min"], bool):
        low = condition["min"] - 1000
        return f"min {condition['min']} -> {low}", {**condition, "min": low}
    if isinstance(condition.get("max_length"), int) and not isinstance(
        condition["max_length"], bool
    ):
        longer = max(1, condition["max_length"]) * WIDEN_FACTOR
        return f"max_length {condition['max_length']} -> {longer}", {
            **condition,
            "max_length": longer,
        }
    return None


def _budget_mutants(
    policy: Mapping[str, Any], index: int, budget: Mapping[str, Any]
) -> list[Mutant]:
    target = f"budget:{budget['id']}"
    out: list[Mutant] = []
    limit = budget.get("limit")
    if isinstance(limit, int) and not isinstance(limit, bool):
        raised = min(limit * WIDEN_FACTOR, MAX_BUDGET_LIMIT)
        data = copy.deepcopy(dict(policy))
        data["budgets"][index] = {**budget, "limit": raised}
        out.append(Mutant(target, "limit:x1000", f"limit {limit} -> {raised}", data))
    data = copy.deepcopy(dict(policy))
    del data["budgets"][index]
    out.append(Mutant(target, "delete", "budget deleted", data))
    return out


# -- the verdict ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Kill:
    """Why a mutant is dead: the first scenario and check that noticed it."""

    scenario_id: str
    detail: str


def kill_of(
    scenario_id: str, original: Mapping[str, bool], mutant: Mapping[str, bool]
) -> Kill | None:
    """A check that passed against the real policy and fails (or is gone) against the mutant."""
    for check_id, passed in sorted(original.items()):
        if not passed:
            continue
        now = mutant.get(check_id)
        if now is None:
            return Kill(scenario_id, f"check {check_id} is no longer produced")
        if not now:
            return Kill(scenario_id, f"check {check_id} fails")
    return None


def order_scenarios(scenario_ids: Sequence[str], likely: Sequence[str]) -> list[str]:
    """Scenarios where the target showed up first (most kills come early), then the rest."""
    first = [s for s in scenario_ids if s in set(likely)]
    return first + [s for s in scenario_ids if s not in set(likely)]
