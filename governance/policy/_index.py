"""Rules indexed by the tool names they can select, so a decision visits only its candidates.

Built once per compiled policy. A rule whose `tool` selector lists only exact names is filed
under each name; one with no `tool` selector but only exact `namespace` names under each
namespace; every other rule (a glob, or no name selector at all) sits in a scan bucket that is
matched with fnmatch. The candidates for one tool name — enabled rules whose name selectors
hold, in rule-id order, each with the selectors still to check per call — depend on nothing
but the name, so they are gathered once per name and kept (up to a bound).

Pure: no I/O, no clock. The name selectors are read exactly as `Match.holds` reads them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TypeVar

from governance.policy._rules import Match, Rule

# Distinct tool names remembered per policy. A model inventing names cannot grow it further;
# past the bound, candidates are gathered from the index on every call (still cheap).
MAX_CACHED_NAMES = 4096

PlanT = TypeVar("PlanT")


def _exact(patterns: Sequence[object]) -> bool:
    """True when every pattern is a plain string fnmatch would only compare for equality."""
    return all(
        isinstance(p, str) and "*" not in p and "?" not in p and "[" not in p for p in patterns
    )


def _namespace(tool: str) -> str:
    return tool.rsplit(".", 1)[0] if "." in tool else ""


def _names_hold(match: Match, tool: str, namespace: str) -> bool:
    """The `tool` and `namespace` part of `Match.holds`, in the same order and spelling."""
    if match.tool is not None and not any(fnmatchcase(tool, p) for p in match.tool):
        return False
    return match.namespace is None or any(fnmatchcase(namespace, p) for p in match.namespace)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A rule whose name selectors hold for one tool; `rest` is what each call still checks."""

    rule: Rule
    rest: Match | None  # None: no selector left, only the rule's conditions


def _candidate(rule: Rule, *, names_checked: bool) -> Candidate:
    match = rule.match
    if not names_checked:
        return Candidate(rule, match)  # re-check everything per call (and fail as it fails)
    rest = dataclasses.replace(match, tool=None, namespace=None)
    return Candidate(rule, None if rest == type(match)() else rest)


class RuleIndex:
    """The enabled rules of one policy, filed by exact tool name, exact namespace, or scan."""

    __slots__ = (
        "_by_namespace",
        "_by_tool",
        "_cache",
        "_checked",
        "_ids_cache",
        "_plans",
        "_rank",
        "_scan",
        "by_id",
        "ordered",
    )

    def __init__(self, rules: Sequence[Rule]) -> None:
        # Every rule (enabled or not) by id, and in id order: what `explain` reports on.
        self.by_id: dict[str, Rule] = {rule.id: rule for rule in rules}
        self.ordered: tuple[Rule, ...] = tuple(self.by_id[i] for i in sorted(self.by_id))
        enabled = sorted((rule for rule in rules if rule.enabled), key=lambda rule: rule.id)
        self._rank = {rule.id: n for n, rule in enumerate(enabled)}
        # Each rule's candidate once its name selectors held: built here, not per tool name.
        self._checked = {rule.id: _candidate(rule, names_checked=True) for rule in enabled}
        self._by_tool: dict[str, list[Rule]] = {}
        self._by_namespace: dict[str, list[Rule]] = {}
        self._scan: list[Rule] = []
        for rule in enabled:
            match = rule.match
            if match.tool is not None and _exact(match.tool):
                for name in dict.fromkeys(match.tool):
                    self._by_tool.setdefault(name, []).append(rule)
            elif match.tool is None and match.namespace is not None and _exact(match.namespace):
                for name in dict.fromkeys(match.namespace):
                    self._by_namespace.setdefault(name, []).append(rule)
            else:
                self._scan.append(rule)
        self._cache: dict[str, tuple[Candidate, ...]] = {}
        self._ids_cache: dict[str, frozenset[str]] = {}
        self._plans: dict[str, object] = {}

    def candidate_ids(self, tool: str) -> frozenset[str]:
        """The ids of `candidates(tool)`: every other rule is disabled or its name selectors
        do not hold for `tool` (so `Match.holds` is False for it, without raising)."""
        found = self._ids_cache.get(tool)
        if found is None:
            found = frozenset(candidate.rule.id for candidate in self.candidates(tool))
            if len(self._ids_cache) < MAX_CACHED_NAMES:
                self._ids_cache[tool] = found
        return found

    def plan(self, tool: str, build: Callable[[str], PlanT]) -> PlanT:
        """`build(tool)`, kept per tool name like the candidates: what an evaluator derives
        from the index for one name (its one builder per index keeps the type)."""
        found = self._plans.get(tool)
        if found is None:
            found = build(tool)
            if len(self._plans) < MAX_CACHED_NAMES:
                self._plans[tool] = found
        return found  # type: ignore[return-value]

    def candidates(self, tool: str) -> tuple[Candidate, ...]:
        """Enabled rules that can apply to a call of `tool`, in rule-id order."""
        found = self._cache.get(tool)
        if found is None:
            found = self._gather(tool)
            if len(self._cache) < MAX_CACHED_NAMES:
                self._cache[tool] = found
        return found

    def _gather(self, tool: str) -> tuple[Candidate, ...]:
        namespace = _namespace(tool)
        chosen: list[Candidate] = []
        for rule in self._by_tool.get(tool, ()):
            # Filed under this exact name, so its `tool` selector holds; only a namespace is left.
            if rule.match.namespace is None:
                chosen.append(self._checked[rule.id])
            else:
                self._choose(chosen, rule, tool, namespace)
        for rule in self._by_namespace.get(namespace, ()):
            chosen.append(self._checked[rule.id])  # no `tool` selector, an exact namespace
        for rule in self._scan:
            self._choose(chosen, rule, tool, namespace)
        chosen.sort(key=lambda candidate: self._rank[candidate.rule.id])
        return tuple(chosen)

    def _choose(self, chosen: list[Candidate], rule: Rule, tool: str, namespace: str) -> None:
        try:
            holds = _names_hold(rule.match, tool, namespace)
        except Exception:  # an odd selector fails per call, inside the evaluator's guard
            chosen.append(_candidate(rule, names_checked=False))
            return
        if holds:
            chosen.append(self._checked[rule.id])
