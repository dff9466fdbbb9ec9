"""Scoring a streamed run's traces where they are made: checks and coverage facts computed from
each trace as it is written (in the -j worker that ran it), and only those sent on.

The scoring pass after the run read every trace file back and parsed it again, and unpacked
every scenario again, to compute what the run had in hand a moment before. What is computed here
is the same function of the same trace (`expand_checks`, `use_facts`), so a stored run
re-scored from its files (`proctor score`) gives the same checks and coverage.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from governance import Policy, ToolRegistry, load_policy
from harness._check_store import StoredChecks
from harness._checks import expand_checks
from harness._coverage import PolicyCoverage, PolicyUse, Tallies, UseFacts, use_facts
from harness._results import CheckResult
from harness._scenario_load import LoadedScenario, resolve_policy_path
from harness._suite_check import registry_for
from harness._trace import Trace

DEFAULT_POLICY_NAME = "governance/data/default_policy.yaml"


def policy_file_name(loaded: LoadedScenario) -> str:
    """The policy file a scenario runs with, as coverage and the baseline name it: the shipped
    one by its place in the source tree, any other next to the scenario file as the trace shows
    that file (`scenarios/policies/budgets.yaml`), whatever directory the suite was copied to."""
    if loaded.scenario.policy == "default":
        return DEFAULT_POLICY_NAME
    return posixpath.normpath(
        posixpath.join(posixpath.dirname(loaded.display_path), loaded.scenario.policy)
    )


class PolicyUses:
    """A scenario's trace as a coverage use: each policy file compiled once, one impact table
    per distinct tool surface (registries are cached)."""

    def __init__(self) -> None:
        self._policies: dict[Path, Policy] = {}
        self._impacts: dict[int, tuple[ToolRegistry, dict[str, Any]]] = {}

    def policy(self, path: Path) -> Policy:
        found = self._policies.get(path)
        if found is None:
            found = self._policies[path] = load_policy(path)
        return found

    def __call__(self, item: LoadedScenario, trace: Trace) -> PolicyUse:
        policy = self.policy(resolve_policy_path(item))
        registry = registry_for(item)
        known = self._impacts.get(id(registry))
        if known is None:
            known = self._impacts[id(registry)] = (
                registry,
                {d.name: d.impact for d in registry.descriptors()},
            )
        return PolicyUse(policy_file_name(item), policy, trace, known[1])


@dataclass(frozen=True, slots=True)
class SourceScore:
    """One trace scored where it was made: its checks and what it adds to coverage."""

    checks: tuple[CheckResult, ...]
    policy_file: str
    policy_path: Path
    coverage: UseFacts


def score_at_source(loaded: LoadedScenario, trace: Trace, uses: PolicyUses) -> SourceScore:
    use = uses(loaded, trace)
    return SourceScore(
        checks=tuple(expand_checks(loaded.scenario, trace)),
        policy_file=use.policy_file,
        policy_path=resolve_policy_path(loaded),
        coverage=use_facts(use),
    )


class SourceScores:
    """A run's scores gathered as its traces are stored: the checks spill to disk a scenario's
    group at a time, coverage is counted per policy file. `suite` is the scenario sequence the
    run ran: the scores stand for scoring that sequence, no other."""

    def __init__(self, suite: Sequence[LoadedScenario]) -> None:
        self.suite = suite
        self.checks = StoredChecks()
        self._tallies = Tallies()
        self._paths: dict[str, Path] = {}
        self.count = 0

    def add(self, scenario_id: str, score: SourceScore) -> None:
        self.checks.add_group(scenario_id, score.checks)
        self._tallies.add(score.policy_file, score.coverage)
        self._paths.setdefault(score.policy_file, score.policy_path)
        self.count += 1

    def coverage(self) -> tuple[PolicyCoverage, ...]:
        """Each policy file compiled once, as the scoring pass compiles it."""
        uses = PolicyUses()
        return self._tallies.coverage(lambda name: uses.policy(self._paths[name]))
