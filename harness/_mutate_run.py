"""Runs the suite against policy mutants: in memory, one mutant per worker task.

For each policy file in scope, the scenarios that run with it are run once against the real
policy (their passing checks are the reference), then against every mutant, scenarios where
the target showed up first, stopping at the first scenario that notices (the kill).
"""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from governance import Policy, parse_policy
from governance.config import load_yaml_with_lines
from governance.core import PolicyError
from harness._checks import expand_checks
from harness._errors import ScenarioError
from harness._mutants_file import Equivalent
from harness._mutate import Kill, Mutant, kill_of, mutants_of, order_scenarios
from harness._scenario_contract import check_contract
from harness._scenario_load import LoadedScenario, resolve_policy_path
from harness._scenario_runner import ProviderChoice, run_scenario
from harness._suite import policy_file_name
from harness._suite_check import registry_for
from harness._trace import Trace

_RUN_ID = "mutate"


@dataclass(frozen=True, slots=True)
class MutantResult:
    policy_file: str
    mutant: Mutant
    kill: Kill | None
    equivalent: Equivalent | None = None

    @property
    def verdict(self) -> str:
        if self.kill is not None:
            return "killed"
        return "equivalent" if self.equivalent is not None else "survived"


def _checks(loaded: LoadedScenario, trace: Trace) -> dict[str, bool]:
    return {c.id: c.passed for c in expand_checks(loaded.scenario, trace)}


def _try_mutant(
    args: tuple[Mutant, str, list[LoadedScenario], dict[str, dict[str, bool]]],
) -> Kill | None:
    mutant, policy_file, scenarios, reference = args
    try:
        policy = parse_policy(json.dumps(mutant.data), policy_file)
    except Exception as exc:  # a mutant the loader refuses would stop the gateway: noticed
        return Kill("-", f"the policy no longer loads ({type(exc).__name__})")
    violations = check_contract(scenarios, registry_for=registry_for, policy_for=lambda _: policy)
    if violations:
        return Kill(violations[0].scenario_id, f"contract: {violations[0].message}")
    for loaded in scenarios:
        trace = run_scenario(loaded, run_id=_RUN_ID, provider=ProviderChoice(), policy=policy)
        kill = kill_of(loaded.scenario.id, reference[loaded.scenario.id], _checks(loaded, trace))
        if kill is not None:
            return kill
    return None


def policies_in_scope(scenarios: Sequence[LoadedScenario]) -> dict[str, list[LoadedScenario]]:
    """Policy file (as coverage names it) -> the scenarios that run with it, in suite order."""
    scope: dict[str, list[LoadedScenario]] = {}
    for item in scenarios:
        scope.setdefault(policy_file_name(item), []).append(item)
    return scope


def mutate_suite(
    scenarios: Sequence[LoadedScenario],
    *,
    only: str | None,
    equivalents: Mapping[tuple[str, str, str], Equivalent],
    jobs: int = 1,
    progress: Callable[[MutantResult], None] | None = None,
) -> list[MutantResult]:
    scope = policies_in_scope(scenarios)
    if only is not None:
        # `--policy FILE` names the file on disk: match it to the name coverage uses.
        wanted = Path(only).resolve()
        named = [
            n for n, items in scope.items() if resolve_policy_path(items[0]).resolve() == wanted
        ]
        only = named[0] if named else only
    if only is not None and only not in scope:
        raise ScenarioError(
            only, None, f"no scenario runs with this policy; in scope: {', '.join(sorted(scope))}"
        )
    work: list[tuple[str, Mutant, tuple[Mutant, str, list[LoadedScenario], Any]]] = []
    known: set[tuple[str, str, str]] = set()
    for policy_file, items in sorted(scope.items()):
        path = resolve_policy_path(items[0])
        # One read, one reader: the mutants come from the document the policy loader sees.
        text = path.read_text(encoding="utf-8")
        document = load_yaml_with_lines(text, str(path), PolicyError, subject="policy")[0]
        mutants = mutants_of(document)
        known |= {(policy_file, m.target, m.mutation) for m in mutants}
        if only is not None and policy_file != only:
            continue
        reference, likely = _reference(items, parse_policy(text, str(path)))
        ids = [item.scenario.id for item in items]
        by_id = {item.scenario.id: item for item in items}
        for mutant in mutants:
            ordered = [by_id[s] for s in order_scenarios(ids, likely.get(mutant.target, []))]
            work.append((policy_file, mutant, (mutant, policy_file, ordered, reference)))
    ghosts = sorted(set(equivalents) - known, key=lambda key: equivalents[key].line)
    if ghosts:
        entry = equivalents[ghosts[0]]
        raise ScenarioError(
            entry.source,
            entry.line,
            f"{entry.target} {entry.mutation} of {entry.policy} is not a mutant `proctor mutate` "
            "generates: fix the name or remove the entry",
        )
    results: list[MutantResult] = []

    def done(policy_file: str, mutant: Mutant, kill: Kill | None) -> None:
        result = MutantResult(
            policy_file, mutant, kill, equivalents.get((policy_file, *mutant.key))
        )
        results.append(result)
        if progress is not None:
            progress(result)

    if jobs <= 1:
        for policy_file, mutant, args in work:
            done(policy_file, mutant, _try_mutant(args))
        return results
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        kills = pool.map(_try_mutant, [args for _, _, args in work])
        for (policy_file, mutant, _), kill in zip(work, kills, strict=True):
            done(policy_file, mutant, kill)
    return results


def _reference(
    items: Sequence[LoadedScenario], policy: Policy
) -> tuple[dict[str, dict[str, bool]], dict[str, list[str]]]:
    """Check results against the real policy, and per target the scenarios it showed up in."""
    reference: dict[str, dict[str, bool]] = {}
    likely: dict[str, list[str]] = {}
    for loaded in items:
        trace = run_scenario(loaded, run_id=_RUN_ID, provider=ProviderChoice(), policy=policy)
        reference[loaded.scenario.id] = _checks(loaded, trace)
        seen: set[str] = set()
        for span in trace.tool_spans:
            seen |= {f"rule:{r}" for r in (*span.matched_rules, *span.decisive_rules)}
            seen |= {f"rule:{c.split('.when[')[0]}" for c in span.decisive_conditions}
            if span.reason and span.reason.startswith("budget_exhausted") and span.rule_ids:
                seen.add(f"budget:{span.rule_ids[0]}")
        for target in sorted(seen):
            likely.setdefault(target, []).append(loaded.scenario.id)
    return reference, likely
