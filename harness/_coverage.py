"""Policy coverage: which rules, conditions and budgets of each policy the suite exercised.

Pure: computed from traces alone (their tool-call spans carry the firewall's evidence), plus
the compiled policies and each tool's effective impact. Definitions (see also
`governance.PolicyEvidence`):

* a rule *matched* a call when its selectors and all its conditions held;
* a rule is *decisive* for a call when disabling it alone would change the decision's effect
  or reason code; a rule is **covered** when it was decisive for at least one call, so a rule
  that only ever agrees with another one (a blanket allow next to a narrow one) is not;
* a condition is *decisive* for a call when its rule's selectors hold and every other
  condition of the rule holds, so flipping its result alone flips whether the rule applies;
  it is reported by the result it had (`held`, `failed`);
* a budget is *charged* by every executed call it applies to (setup calls included) and
  **covered** when it denied at least one call (a limit raised 1000-fold would stop denying).

Coverage items are named `rule:<id>` and `budget:<id>`; disabled rules are not items.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from governance import Impact, Policy
from harness._trace import Trace

_BUDGET_REASON = "budget_exhausted"


@dataclass(frozen=True, slots=True)
class PolicyUse:
    """One scenario's trace, the policy file it ran with and its tools' effective impacts."""

    policy_file: str
    policy: Policy
    trace: Trace
    impacts: Mapping[str, Impact]


@dataclass(frozen=True, slots=True)
class PolicyCoverage:
    """What the suite exercised of one policy file."""

    policy_file: str
    scenarios: tuple[str, ...]
    rules: tuple[str, ...]  # enabled rule ids, sorted
    budgets: tuple[str, ...]  # budget ids, sorted
    conditions: tuple[str, ...]  # `<rule>.when[<i>]` of enabled rules, sorted
    matched: Mapping[str, int] = field(default_factory=dict)
    decisive: Mapping[str, int] = field(default_factory=dict)
    condition_results: Mapping[str, int] = field(default_factory=dict)  # `...:held|failed`
    charged: Mapping[str, int] = field(default_factory=dict)
    denied: Mapping[str, int] = field(default_factory=dict)

    @property
    def items(self) -> tuple[str, ...]:
        return (*(f"budget:{b}" for b in self.budgets), *(f"rule:{r}" for r in self.rules))

    @property
    def covered(self) -> tuple[str, ...]:
        return tuple(item for item in self.items if self._is_covered(item))

    @property
    def uncovered(self) -> tuple[str, ...]:
        return tuple(item for item in self.items if not self._is_covered(item))

    @property
    def undecided_conditions(self) -> tuple[str, ...]:
        """Conditions never decisive either way: nothing shows what they are for."""
        return tuple(
            c
            for c in self.conditions
            if not (
                self.condition_results.get(f"{c}:held") or self.condition_results.get(f"{c}:failed")
            )
        )

    def _is_covered(self, item: str) -> bool:
        kind, _, name = item.partition(":")
        counts = self.denied if kind == "budget" else self.decisive
        return counts.get(name, 0) > 0

    def why_uncovered(self, item: str) -> str:
        """A line saying how far the suite got with an uncovered item."""
        kind, _, name = item.partition(":")
        if kind == "budget":
            charged = self.charged.get(name, 0)
            return f"budget {name}: charged {charged} time(s), never denied a call"
        matched = self.matched.get(name, 0)
        if matched:
            return f"rule {name}: matched {matched} call(s), decisive for none"
        return f"rule {name}: matched no call"


def measure(uses: Iterable[PolicyUse]) -> tuple[PolicyCoverage, ...]:
    """Coverage per policy file, sorted by file. One pass: each use (and its trace) is counted
    and let go, so a suite of any size is measured in constant memory per policy file."""
    tallies = Tallies()
    for use in uses:
        tallies.add(use.policy_file, use_facts(use), use.policy)
    return tallies.coverage(lambda policy_file: None)


@dataclass(frozen=True, slots=True)
class UseFacts:
    """What one scenario's trace adds to its policy file's coverage: small, and made of plain
    values, so a -j worker computes it where the trace is and sends only this."""

    scenario_id: str
    matched: tuple[str, ...]
    decisive: tuple[str, ...]
    conditions: tuple[str, ...]
    charged: tuple[str, ...]  # a budget id per executed call it applies to
    denied: tuple[str, ...]  # the denying budget's id per call a budget denied


def use_facts(use: PolicyUse) -> UseFacts:
    executed: list[str] = [
        record.subject
        for record in use.trace.setup
        if record.kind == "prior_call" and record.outcome == "executed"
    ]
    matched: list[str] = []
    decisive: list[str] = []
    conditions: list[str] = []
    denied: list[str] = []
    for span in use.trace.tool_spans:
        matched += span.matched_rules
        decisive += span.decisive_rules
        conditions += span.decisive_conditions
        if span.outcome == "executed":
            executed.append(span.tool)
        elif span.reason and span.reason.startswith(_BUDGET_REASON) and span.rule_ids:
            denied.append(span.rule_ids[0])
    charged: list[str] = []
    for tool in executed:
        impact = use.impacts.get(tool)
        for budget in use.policy.budgets:
            if impact is not None and budget.applies_to(tool, impact):
                charged.append(budget.id)
    return UseFacts(
        use.trace.scenario_id,
        tuple(matched),
        tuple(decisive),
        tuple(conditions),
        tuple(charged),
        tuple(denied),
    )


class Tallies:
    """Coverage counts per policy file, added use by use (constant memory per file)."""

    def __init__(self) -> None:
        self._tallies: dict[str, _Tally] = {}

    def add(self, policy_file: str, facts: UseFacts, policy: Policy | None = None) -> None:
        """`policy`: the compiled policy the use ran with, when at hand; a file's first one is
        kept (scenarios of one file may in principle see different versions, a mid-run edit:
        the items come from the first, and counts only from ids that exist in it)."""
        tally = self._tallies.get(policy_file)
        if tally is None:
            tally = self._tallies[policy_file] = _Tally(policy)
        tally.add(facts)

    def coverage(self, policy_of: Callable[[str], Policy | None]) -> tuple[PolicyCoverage, ...]:
        """Per policy file, sorted; `policy_of` gives the policy of a file none was added for."""
        found: list[PolicyCoverage] = []
        for name in sorted(self._tallies):
            tally = self._tallies[name]
            policy = tally.policy if tally.policy is not None else policy_of(name)
            if policy is None:
                raise ValueError(f"no compiled policy for {name}")
            found.append(tally.coverage(name, policy))
        return tuple(found)


class _Tally:
    """What the uses of one policy file add up to."""

    def __init__(self, policy: Policy | None) -> None:
        self.policy = policy
        self.scenarios: list[str] = []
        self.matched: Counter[str] = Counter()
        self.decisive: Counter[str] = Counter()
        self.conditions: Counter[str] = Counter()
        self.charged: Counter[str] = Counter()
        self.denied: Counter[str] = Counter()

    def add(self, facts: UseFacts) -> None:
        self.scenarios.append(facts.scenario_id)
        self.matched.update(facts.matched)
        self.decisive.update(facts.decisive)
        self.conditions.update(facts.conditions)
        self.charged.update(facts.charged)
        self.denied.update(facts.denied)

    def coverage(self, policy_file: str, policy: Policy) -> PolicyCoverage:
        enabled = [rule for rule in policy.rules if rule.enabled]
        return PolicyCoverage(
            policy_file=policy_file,
            scenarios=tuple(sorted(self.scenarios)),
            rules=tuple(sorted(rule.id for rule in enabled)),
            budgets=tuple(sorted(budget.id for budget in policy.budgets)),
            conditions=tuple(
                sorted(f"{rule.id}.when[{n}]" for rule in enabled for n in range(len(rule.when)))
            ),
            matched=dict(self.matched),
            decisive=dict(self.decisive),
            condition_results=dict(self.conditions),
            charged=dict(self.charged),
            denied=dict(self.denied),
        )


def render_coverage(coverage: Iterable[PolicyCoverage]) -> list[str]:
    """Terminal lines: one summary per policy file in scope, then every uncovered item."""
    lines: list[str] = []
    for item in coverage:
        rules = sum(1 for c in item.covered if c.startswith("rule:"))
        budgets = sum(1 for c in item.covered if c.startswith("budget:"))
        lines.append(
            f"coverage {item.policy_file} ({len(item.scenarios)} scenario(s)): "
            f"rules {rules}/{len(item.rules)} decisive, budgets {budgets}/{len(item.budgets)} "
            f"denying, conditions {len(item.conditions) - len(item.undecided_conditions)}/"
            f"{len(item.conditions)} decisive"
        )
        lines += [f"  uncovered {item.why_uncovered(name)}" for name in item.uncovered]
        lines += [f"  condition {c} never decisive" for c in item.undecided_conditions]
    return lines
