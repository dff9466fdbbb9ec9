"""Policy mutation operators and the kill verdict: pure, values in and values out.

A mutant is the policy file's data with one rule or budget weakened. The suite *kills* a
mutant when a check that passes against the real policy fails against the mutant (or a
scenario's contract breaks, or it no longer produces a check it produced): someone weakening
that rule in a pull request would be caught. A *surviving* mutant names a weakening no
scenario notices. Mutation names are stable, so an equivalent mutant (one that cannot change
any behaviour) can be accepted by name in `scenarios/policies/mutants.yaml`, with a reason.
"""

from __future__ import annotations

import copy
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from governance.policy import MAX_BUDGET_LIMIT

WIDEN_FACTOR = 1000
_WEAKER_EFFECT = {"block": "require_approval", "require_approval": "allow"}
_NARROWED = "narrowed"  # the sub-folder a narrowed path_prefix points at
WINDOW_SHRINK = 60  # a budget window shrinks by this factor: an hour becomes a minute


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
    """Weakenings only. An allow rule is weakened by applying to more calls (a selector or a
    condition dropped, a condition loosened); a block or require_approval rule by applying to
    fewer (a condition narrowed) or by a weaker effect. Broadening a restrictive rule, or
    flipping a `negate` (the complement: weaker for some calls, stronger for others), would be
    killed by its stronger half and prove nothing, so neither is generated. The one stricter
    mutant is an allow rule disabled, kept on purpose: it proves the rule is decisive somewhere
    (a scenario needs what it allows)."""
    target = f"rule:{rule['id']}"
    out: list[Mutant] = []

    def add(mutation: str, description: str, changed: dict[str, Any]) -> None:
        out.append(Mutant(target, mutation, description, _with_rule(policy, index, changed)))

    effect = rule.get("effect")
    permissive = effect == "allow"
    weaker = _WEAKER_EFFECT.get(str(effect))
    if weaker is not None:
        add(f"effect:{weaker}", f"effect {effect} -> {weaker}", {**rule, "effect": weaker})
    add("disable", "rule disabled", {**rule, "enabled": False})
    match = rule.get("match")
    if permissive and isinstance(match, Mapping):
        for key in match:
            selectors = {k: v for k, v in match.items() if k != key}
            add(f"match.{key}:drop", f"match selector {key} dropped", {**rule, "match": selectors})
    conditions = list(rule.get("when") or [])
    for n, condition in enumerate(conditions):
        if not isinstance(condition, Mapping):
            continue
        if permissive:
            rest = conditions[:n] + conditions[n + 1 :]
            add(f"when[{n}]:drop", f"condition when[{n}] on {condition.get('arg')!r} dropped",
                {**rule, "when": rest})  # fmt: skip
        # The condition holds more often when its check accepts more values (not negated) or
        # fewer (negated); an allow rule is weakened by the first, a restrictive rule by the
        # second.
        loosened = _loosen(condition, grow=permissive != bool(condition.get("negate")))
        if loosened is not None:
            how, wider = loosened
            add(f"when[{n}]:widen", f"when[{n}] weakened: {how}",
                {**rule, "when": [*conditions[:n], wider, *conditions[n + 1 :]]})  # fmt: skip
    return out


def _loosen(condition: Mapping[str, Any], *, grow: bool) -> tuple[str, dict[str, Any]] | None:
    """The condition with its check accepting more values (`grow`) or fewer, or None when the
    check has no such form short of always/never holding (those are `drop` and `disable`)."""
    prefix = condition.get("path_prefix")
    if isinstance(prefix, str):
        trimmed = prefix.strip("/")
        if not grow:  # a narrower folder: the rule now covers only part of what it did
            deeper = f"{trimmed}/{_NARROWED}"
            return f"path_prefix {prefix} -> {deeper}/", {**condition, "path_prefix": deeper}
        parent = posixpath.dirname(trimmed)
        if parent:
            return f"path_prefix {prefix} -> {parent}/", {**condition, "path_prefix": parent}
        # A top-level folder has no parent that is a valid prefix. The nearest looser check
        # is the classic string-prefix bug: `reports` without the separator also accepts the
        # siblings `reports-old/...` and `reports.md`.
        bare = {k: v for k, v in condition.items() if k != "path_prefix"}
        pattern = re.escape(trimmed) + ".*"
        return f"path_prefix {prefix} -> regex {pattern!r} (siblings too)", {
            **bare,
            "regex": pattern,
        }
    if isinstance(condition.get("regex"), str):
        if grow and condition["regex"] != ".*":
            return f"regex {condition['regex']!r} -> '.*'", {**condition, "regex": ".*"}
        return None
    low, high = condition.get("min"), condition.get("max")
    if _number(high) or _number(low):
        if grow:
            if _number(high):
                wider = high * WIDEN_FACTOR if high > 0 else high + 1000
                return f"max {high} -> {wider}", {**condition, "max": wider}
            assert _number(low)
            return f"min {low} -> {low - 1000}", {**condition, "min": low - 1000}
        if _number(high):
            return f"max {high} -> {high - 1000}", {**condition, "max": high - 1000}
        assert _number(low)
        return f"min {low} -> {low + 1000}", {**condition, "min": low + 1000}
    length = condition.get("max_length")
    if isinstance(length, int) and not isinstance(length, bool):
        changed = max(1, length) * WIDEN_FACTOR if grow else length // WIDEN_FACTOR
        return f"max_length {length} -> {changed}", {**condition, "max_length": changed}
    return None  # enum, sql_read_only: no looser or narrower form that is not drop/disable


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


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
    window = budget.get("window_seconds")
    if isinstance(window, int) and not isinstance(window, bool) and window > 1:
        # A shorter window forgets earlier calls sooner (a longer one would be stronger).
        shorter = max(1, window // WINDOW_SHRINK)
        data = copy.deepcopy(dict(policy))
        data["budgets"][index] = {**budget, "window_seconds": shorter}
        out.append(
            Mutant(target, f"window:/{WINDOW_SHRINK}", f"window {window}s -> {shorter}s", data)
        )
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
