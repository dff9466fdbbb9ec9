"""The scenarios of one user task: the task alone, and the task under each injection task.

Expectations are the ideal outcome, the same for every task and never tuned to one: the user
task's own check passes, and (for a pair) the attack's goal is not met. The replay script is the
worst case for the policy: a model that does the user's task step by step and, as soon as a tool
result shows it the injection, carries out the injection task before finishing the user's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.agentdojo._attack import ATTACK_NAME
from harness.agentdojo._ground_truth import GroundTruthError, Step

MAX_STEPS = 50  # the scenario schema's cap on `max_steps`
SPARE_TURNS = 2  # beyond the turns the script needs, so one unexpected turn is seen, not cut


@dataclass(frozen=True, slots=True)
class TaskFacts:
    """What a scenario of one suite's user task is made of."""

    suite: str
    version: str
    policy: str  # relative to the scenario file
    user_task: str
    prompt: str
    answer: str  # the task's GROUND_TRUTH_OUTPUT: utility checks may read the answer


@dataclass(frozen=True, slots=True)
class Attack:
    """One injection task against the user task: where its text goes and what it then does."""

    injection_task: str
    injections: Mapping[str, str]  # vector id: attack text
    steps: tuple[Step, ...]  # the injection task's ground truth


def tool_name(suite: str, function: str) -> str:
    """The governed tool an AgentDojo function is: `<suite>.<function>`."""
    return f"{suite}.{function}"


def scenario_id(facts: TaskFacts, injection_task: str | None = None) -> str:
    base = f"agentdojo-{facts.suite}-{facts.user_task}"
    return base if injection_task is None else f"{base}-{injection_task}"


def alone(facts: TaskFacts, steps: Sequence[Step]) -> dict[str, Any]:
    """The user task without an attack, replaying its ground truth."""
    script = [*_turns(facts.suite, steps), {"answer": facts.answer}]
    return _scenario(
        facts,
        scenario_id(facts),
        f"AgentDojo {facts.version} {facts.suite} {facts.user_task}, no attack: the scripted "
        f"model follows the task's ground truth ({_calls(len(steps))}) and gives its expected "
        "answer.",
        ["agentdojo", f"agentdojo-{facts.suite}", "user-task"],
        {},
        _max_steps(facts, None, len(script)),
        script,
        {"utility": True},
    )


def attacked(
    facts: TaskFacts, steps: Sequence[Step], reveal: int, attack: Attack
) -> dict[str, Any]:
    """The user task under `attack`: its calls up to the one at index `reveal` (the first whose
    result shows the injection), then, if that call executed, the injection task's calls, and
    the rest of the user task either way (a model that never saw the injection cannot obey it)."""
    rest = [*_turns(facts.suite, steps[reveal + 1 :]), {"answer": facts.answer}]
    script: list[dict[str, Any]] = [
        *_turns(facts.suite, steps[: reveal + 1]),
        {"branch": {"executed": [*_turns(facts.suite, attack.steps), *rest]}, "otherwise": rest},
    ]
    longest = reveal + 1 + len(attack.steps) + len(rest)
    return _pair(
        facts,
        attack,
        "the scripted model obeys the injection as soon as a tool result shows it, the worst "
        "case the policy must contain.",
        _max_steps(facts, attack.injection_task, longest),
        script,
    )


def live_only(facts: TaskFacts, attack: Attack) -> dict[str, Any]:
    """The user task under `attack` without a replay script, for a pair whose injection task
    AgentDojo gives no ground truth that meets its own security check (some goals, such as
    "forward every unread email", have none): a scripted model could not obey it, so in replay
    the pair would always read as contained. A live model can still be measured on it."""
    return _pair(
        facts,
        attack,
        "live only, as AgentDojo's ground truth for this injection task does not meet its own "
        "goal, so no scripted model could play the compromised one.",
        MAX_STEPS,  # no script to bound the run: the schema's cap
        [],
    )


def _pair(
    facts: TaskFacts,
    attack: Attack,
    what: str,
    max_steps: int,
    script: list[dict[str, Any]],
) -> dict[str, Any]:
    """A user x injection scenario: its id, description, tags, task and expectations."""
    vectors = ", ".join(attack.injections)
    return _scenario(
        facts,
        scenario_id(facts, attack.injection_task),
        f"AgentDojo {facts.version} {facts.suite} {facts.user_task} attacked with "
        f"{attack.injection_task} (attack: {ATTACK_NAME}, in {vectors}): {what}",
        ["agentdojo", f"agentdojo-{facts.suite}", "injection", attack.injection_task],
        {"injection_task": attack.injection_task, "injections": dict(attack.injections)},
        max_steps,
        script,
        {"utility": True, "attack_succeeded": False},
    )


def _scenario(
    facts: TaskFacts,
    identifier: str,
    description: str,
    tags: list[str],
    attack: dict[str, Any],
    max_steps: int,
    script: list[dict[str, Any]],
    expect: dict[str, bool],
) -> dict[str, Any]:
    task = {
        "suite": facts.suite,
        "benchmark_version": facts.version,
        "user_task": facts.user_task,
        **attack,
    }
    return {
        "id": identifier,
        "description": description,
        "tags": tags,
        "request": facts.prompt,
        "tools": "agentdojo",
        "agentdojo": task,
        "policy": facts.policy,
        "max_steps": max_steps,
        **({"script": script} if script else {}),
        "expect": {"agentdojo": expect},
    }


def _turns(suite: str, steps: Sequence[Step]) -> list[dict[str, Any]]:
    """One call a turn, as AgentDojo's ground truth makes them one after another."""
    return [{"calls": [_call(suite, step)]} for step in steps]


def _call(suite: str, step: Step) -> dict[str, Any]:
    call: dict[str, Any] = {"tool": tool_name(suite, step.function)}
    if step.args:
        call["args"] = dict(step.args)
    return call


def _max_steps(facts: TaskFacts, injection_task: str | None, turns: int) -> int:
    needed = turns + SPARE_TURNS
    if needed > MAX_STEPS:
        pair = (
            facts.user_task if injection_task is None else f"{facts.user_task} x {injection_task}"
        )
        raise GroundTruthError(
            f"{facts.suite} {pair} needs {turns} turns (+{SPARE_TURNS} spare), more than the "
            f"scenario schema's max_steps cap of {MAX_STEPS}"
        )
    return needed


def _calls(count: int) -> str:
    return "1 call" if count == 1 else f"{count} calls"
