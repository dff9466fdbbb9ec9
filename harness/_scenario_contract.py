"""The contract check: every name a scenario uses must exist where the scenario runs.

Runs before anything executes. A tool named in a script or an expectation must be registered
(a ghost tool in `must_not_execute` would pass trivially), rule and budget ids must exist in
the scenario's policy, and scripted arguments must validate against the tool's input schema.
Only calls marked `hallucinated: true` may name a tool that does not exist.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from governance import ConfigError, Policy, SchemaRefused, ToolRegistry
from governance.arguments import schema_checks
from governance.config import Loc, format_loc
from governance.screening import redact_text
from harness._scenario import AgentDojoTask, BlockExpectation, Scenario
from harness._scenario_load import LoadedScenario
from harness.providers._replay import ScriptedBranch, ScriptedCall, ScriptStep

ViolationKind = Literal[
    "unknown_tool",
    "unknown_rule",
    "unknown_budget",
    "unknown_scope",
    "invalid_arguments",
    "registered_hallucination",
    "invalid_policy",
    "secret_in_expectation",
    "claims_check_off",
    "unknown_task",
]
_BUDGET_REASON = "budget_exhausted:"


@dataclass(frozen=True, slots=True)
class ContractViolation:
    """One name or argument a scenario uses that its registry or policy does not have."""

    path: Path
    line: int
    scenario_id: str
    name: str  # the offending tool, rule id, budget id or scope
    kind: ViolationKind
    suggestion: str | None  # the closest real name, if one is close
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: scenario {self.scenario_id}: {self.message}"


def check_contract(
    loaded: Sequence[LoadedScenario],
    *,
    registry_for: Callable[[LoadedScenario], ToolRegistry],
    policy_for: Callable[[LoadedScenario], Policy],
) -> list[ContractViolation]:
    """Every violation in the suite, sorted by (path, line). Empty means the suite may run."""
    found: list[ContractViolation] = []
    for item in loaded:
        found.extend(_check_one(item, registry_for(item), policy_for))
    return sorted(found, key=lambda v: (str(v.path), v.line))


def _closest(name: str, choices: Sequence[str]) -> str | None:
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return close[0] if close else None


def _hint(suggestion: str | None) -> str:
    return f" (did you mean {suggestion!r}?)" if suggestion else ""


class _Checker:
    """Collects the violations of one scenario, each at the line of its key."""

    def __init__(self, item: LoadedScenario) -> None:
        self.item = item
        self.found: list[ContractViolation] = []

    def add(
        self,
        loc: Loc,
        name: str,
        kind: ViolationKind,
        message: str,
        suggestion: str | None = None,
    ) -> None:
        self.found.append(
            ContractViolation(
                path=self.item.path,
                line=self.item.line_of(*loc),
                scenario_id=self.item.scenario.id,
                name=name,
                kind=kind,
                suggestion=suggestion,
                message=message,
            )
        )


def _check_one(
    item: LoadedScenario,
    registry: ToolRegistry,
    policy_for: Callable[[LoadedScenario], Policy],
) -> list[ContractViolation]:
    checker = _Checker(item)
    scenario = item.scenario
    names = registry.names()
    calls = list(_script_calls(scenario.script, ("script",)))
    invented = {call.tool for _, call in calls if call.hallucinated}

    def tool_named(loc: Loc, tool: str, *, in_script: bool = False) -> bool:
        if tool in registry or (not in_script and tool in invented):
            return True
        suggestion = _closest(tool, names)
        message = f"unknown tool {tool!r}{_hint(suggestion)}"
        if suggestion is None:
            message += (
                ": mark the call `hallucinated: true` if the model is meant to invent it"
                if in_script
                else ": no registered tool has this name, so this check could never fail "
                "for the right reason"
            )
        checker.add(loc, tool, "unknown_tool", message, suggestion)
        return False

    for loc, call in calls:
        if call.hallucinated:
            if call.tool in registry:
                checker.add(
                    (*loc, "hallucinated"),
                    call.tool,
                    "registered_hallucination",
                    f"tool {call.tool!r} is registered, so a call to it is not hallucinated: "
                    "remove `hallucinated: true` or name a tool that does not exist",
                )
            continue
        if tool_named((*loc, "tool"), call.tool, in_script=True) and call.raw_args is None:
            _check_arguments(checker, registry, (*loc, "args"), call.tool, call.args)

    for index, prior in enumerate(scenario.setup.prior_calls):
        loc = ("setup", "prior_calls", index)
        if tool_named((*loc, "tool"), prior.tool):
            _check_arguments(checker, registry, (*loc, "args"), prior.tool, prior.args)

    for loc, tool in _expected_tools(scenario):
        tool_named(loc, tool)

    _check_answer_texts(checker, scenario)
    _check_claims_expectations(checker, scenario)
    if scenario.agentdojo is not None:
        _check_agentdojo_task(checker, scenario.agentdojo)

    try:
        policy = policy_for(item)
    except ConfigError as exc:
        checker.add(("policy",), scenario.policy, "invalid_policy", f"cannot use its policy: {exc}")
        return checker.found
    _check_policy_names(checker, scenario, policy)
    return checker.found


def _check_agentdojo_task(checker: _Checker, task: AgentDojoTask) -> None:
    """The AgentDojo tasks and injection vectors a scenario names exist in its suite (the
    suite itself was loaded with the registry)."""
    from governance.agentdojo import AgentDojoUnavailable, injection_task, suite_tools, user_task

    tools = suite_tools(task.suite, task.benchmark_version)
    named = [("user_task", task.user_task, user_task)]
    if task.injection_task is not None:
        named.append(("injection_task", task.injection_task, injection_task))
    for field, task_id, lookup in named:
        try:
            lookup(tools, task_id)
        except AgentDojoUnavailable as exc:
            checker.add(("agentdojo", field), task_id, "unknown_task", exc.args[0])
    vectors = tools.vectors()
    for vector, text in task.injections.items():
        problem = tools.injection_problem(text) if vector in vectors else None
        if problem is not None:
            checker.add(
                ("agentdojo", "injections", vector),
                vector,
                "unknown_task",
                f"AgentDojo's environment cannot take this injection text ({problem}); AgentDojo "
                "formats it into its YAML, so avoid characters that end a quoted string there",
            )
    for vector in task.injections:
        if vector not in vectors:
            suggestion = _closest(vector, sorted(vectors))
            checker.add(
                ("agentdojo", "injections", vector),
                vector,
                "unknown_task",
                f"suite {task.suite!r} has no injection vector {vector!r}{_hint(suggestion)}",
                suggestion,
            )


def _check_answer_texts(checker: _Checker, scenario: Scenario) -> None:
    """Traces store answers redacted, so a secret-shaped expected text could never be judged:
    `answer_contains` would always fail, `answer_not_contains` always pass."""
    for key in ("answer_contains", "answer_not_contains"):
        for index, text in enumerate(getattr(scenario.expect, key)):
            if redact_text(text) != text:
                checker.add(
                    ("expect", key, index),
                    key,
                    "secret_in_expectation",
                    f"expect.{key}[{index}] looks like a secret, and answers are stored "
                    "redacted, so this check could never fail for the right reason: expect a "
                    "non-secret part of the text instead (e.g. the key's name)",
                )


def _check_claims_expectations(checker: _Checker, scenario: Scenario) -> None:
    """A `claims` expectation needs the check on, and a `claim` text the trace can hold."""
    for index, item in enumerate(scenario.expect.claims):
        if scenario.claims_mode == "off":
            checker.add(
                ("expect", "claims", index),
                "claims",
                "claims_check_off",
                f"expect.claims[{index}] judges the answer's claims check, but the scenario "
                "sets claims_mode: off, so the check never runs: remove claims_mode or the "
                "expectation",
            )
        if item.claim is not None and redact_text(item.claim) != item.claim:
            checker.add(
                ("expect", "claims", index, "claim"),
                "claims",
                "secret_in_expectation",
                f"expect.claims[{index}].claim looks like a secret, and findings are stored "
                "redacted, so this check could never pass: expect a non-secret part instead",
            )


def _script_calls(steps: Sequence[ScriptStep], base: Loc) -> Iterator[tuple[Loc, ScriptedCall]]:
    """Every scripted call with its location, branches included."""
    for index, step in enumerate(steps):
        loc = (*base, index)
        if isinstance(step, ScriptedBranch):
            for outcome, branch_steps in step.branch.items():
                yield from _script_calls(branch_steps, (*loc, "branch", outcome))
            if step.otherwise is not None:
                yield from _script_calls(step.otherwise, (*loc, "otherwise"))
        else:
            for number, call in enumerate(step.calls):
                yield (*loc, "calls", number), call


def _expected_tools(scenario: Scenario) -> Iterator[tuple[Loc, str]]:
    expect = scenario.expect
    for key, tools in (
        ("must_propose", expect.must_propose),
        ("must_execute", expect.must_execute),
        ("must_not_execute", expect.must_not_execute),
        ("must_hold", expect.must_hold),
    ):
        for index, tool in enumerate(tools):
            yield ("expect", key, index), tool
    for index, block in enumerate(expect.must_block):
        if isinstance(block, BlockExpectation):
            yield ("expect", "must_block", index, "tool"), block.tool
        else:
            yield ("expect", "must_block", index), block
    for index, evidence in enumerate(expect.policy_evidence):
        yield ("expect", "policy_evidence", index, "tool"), evidence.tool
    for index, budget in enumerate(expect.budget):
        if budget.tool is not None:
            yield ("expect", "budget", index, "tool"), budget.tool
    for index, approval in enumerate(expect.approvals):
        yield ("expect", "approvals", index, "tool"), approval.tool


def _check_policy_names(checker: _Checker, scenario: Scenario, policy: Policy) -> None:
    rule_ids = list(policy.rule_ids)
    budget_ids = [budget.id for budget in policy.budgets]
    scopes = sorted({budget.scope for budget in policy.budgets})
    expect = scenario.expect

    def budget_named(loc: Loc, budget: str) -> None:
        if budget in budget_ids:
            return
        suggestion = _closest(budget, budget_ids)
        known = ", ".join(sorted(budget_ids)) or "none"
        checker.add(
            loc,
            budget,
            "unknown_budget",
            f"unknown budget {budget!r}{_hint(suggestion)}: the policy's budgets are {known}",
            suggestion,
        )

    def reason_named(loc: Loc, reason: str | None) -> None:
        if reason is None or not reason.startswith(_BUDGET_REASON):
            return
        scope = reason.removeprefix(_BUDGET_REASON)
        if scope in scopes:
            return
        suggestion = _closest(scope, scopes)
        known = ", ".join(scopes) or "none"
        checker.add(
            loc,
            scope,
            "unknown_scope",
            f"no budget in the policy has scope {scope!r}{_hint(suggestion)}, so "
            f"{reason!r} cannot happen: the policy's budget scopes are {known}",
            suggestion,
        )

    for index, evidence in enumerate(expect.policy_evidence):
        loc = ("expect", "policy_evidence", index)
        named = [("rule_ids", n, r) for n, r in enumerate(evidence.rule_ids)]
        named += [("matched", n, r) for n, r in enumerate(evidence.matched or [])]
        for field, number, rule_id in named:
            if rule_id not in rule_ids:
                suggestion = _closest(rule_id, rule_ids)
                checker.add(
                    (*loc, field, number),
                    rule_id,
                    "unknown_rule",
                    f"unknown rule {rule_id!r}{_hint(suggestion)}: no rule of the policy has "
                    "this id",
                    suggestion,
                )
        reason_named((*loc, "reason"), evidence.reason)
    for index, block in enumerate(expect.must_block):
        if isinstance(block, BlockExpectation):
            reason_named(("expect", "must_block", index, "reason"), block.reason)
    for index, budget in enumerate(expect.budget):
        loc = ("expect", "budget", index)
        if budget.budget is not None:
            budget_named((*loc, "budget"), budget.budget)
        reason_named((*loc, "reason"), budget.reason)
    for index, reset in enumerate(scenario.setup.budget_resets):
        budget_named(("setup", "budget_resets", index, "budget"), reset.budget)


def _check_arguments(
    checker: _Checker, registry: ToolRegistry, loc: Loc, tool: str, args: Mapping[str, Any]
) -> None:
    """Scripted arguments against the tool's input schema, one violation per problem."""
    descriptor = registry.get(tool)
    if descriptor is None:
        return
    try:  # the firewall's own checks: local references only, nothing is ever fetched
        validator, proof = schema_checks(descriptor)
    except SchemaRefused as exc:
        checker.add(
            loc,
            tool,
            "invalid_arguments",
            f"cannot check the arguments of {tool!r}: {exc} ({exc.reason})",
        )
        return
    if proof is not None and proof(args):
        return  # valid the way jsonschema reads the schema: no violation to word
    schema = descriptor.input_schema

    def bad(where: Loc, problem: str) -> None:
        checker.add((*loc, *where), tool, "invalid_arguments", f"{tool}: {problem}")

    properties = schema.get("properties")
    declared = sorted(properties) if isinstance(properties, Mapping) else []
    required = schema.get("required")
    for name in sorted(required) if isinstance(required, list) else []:
        if name not in args:
            bad((), f"missing required argument {name!r}")
    if schema.get("additionalProperties") is False:
        for name in sorted(set(args) - set(declared)):
            suggestion = _closest(name, declared)
            allowed = ", ".join(declared) or "none"
            bad(
                (name,),
                f"unknown argument {name!r}{_hint(suggestion)}: its arguments are {allowed}",
            )
    errors = sorted(validator.iter_errors(dict(args)), key=lambda e: [str(p) for p in e.path])
    for error in errors:
        path: Loc = tuple(p if isinstance(p, int) else str(p) for p in error.absolute_path)
        if not path and error.validator in ("required", "additionalProperties"):
            continue  # said above, with the argument's name
        subject = f"argument {format_loc(path)!r}" if path else "the arguments"
        bad(path, f"{subject}: {error.message}")
