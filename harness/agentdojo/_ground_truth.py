"""A task's ground truth as replayable calls, and which of its results show which injection.

Which call reveals which injection vector is found the way AgentDojo finds injectable tasks
(`BaseAttack.get_injection_candidates`): run the user task's ground truth with AgentDojo's own
`FunctionsRuntime` on an environment holding a canary string in every vector, and look for the
canaries in each result, rendered as the governed tool returns it (`render_result`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from governance.agentdojo import render_result
from harness._errors import HarnessError


class GroundTruthError(HarnessError):
    """A task's ground truth cannot become a replay script (names the task and why)."""


@dataclass(frozen=True, slots=True)
class Step:
    """One ground-truth call: the suite's function and its JSON arguments."""

    function: str
    args: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Walk:
    """A user task's ground truth run on the canary environment."""

    steps: tuple[Step, ...]
    revealed: tuple[tuple[str, ...], ...]  # per step: the vectors its result shows

    @property
    def vectors(self) -> tuple[str, ...]:
        """Every vector some result shows, sorted: the ones an attack on this task fills."""
        return tuple(sorted({vector for shown in self.revealed for vector in shown}))

    @property
    def first_reveal(self) -> int | None:
        """The index of the first call whose result shows an injection, or None."""
        return next((n for n, shown in enumerate(self.revealed) if shown), None)


def ground_truth_steps(task: Any, pre_environment: Any) -> tuple[Step, ...]:
    """`task.ground_truth(pre_environment)` as steps with JSON-safe arguments (a ground truth
    only reads the environment, as AgentDojo's ground-truth pipeline assumes)."""
    calls = task.ground_truth(pre_environment)
    return tuple(
        Step(call.function, _json_args(task.ID, call.function, call.args)) for call in calls
    )


def walk(
    user_task: Any, tools: Sequence[Any], canary_environment: Any, marks: Mapping[str, str]
) -> Walk:
    """Run the user task's ground truth on `canary_environment` (initialised for the task,
    then changed by the calls, as in a run) and note the canaries in each result."""
    from agentdojo.functions_runtime import FunctionsRuntime

    environment = user_task.init_environment(canary_environment)
    steps = ground_truth_steps(user_task, environment)
    runtime = FunctionsRuntime(list(tools))
    revealed: list[tuple[str, ...]] = []
    for step in steps:
        try:
            value, _ = runtime.run_function(
                environment, step.function, dict(step.args), raise_on_error=True
            )
        except Exception as exc:
            raise GroundTruthError(
                f"{user_task.ID}: its ground-truth call {step.function} fails in AgentDojo "
                f"itself ({type(exc).__name__}: {exc})"
            ) from exc
        text = render_result(value)  # what the governed tool returns to the model
        revealed.append(tuple(sorted(v for v, mark in marks.items() if mark in text)))
    return Walk(steps, tuple(revealed))


def attack_reaches_its_goal(
    tools: Sequence[Any],
    injection_task: Any,
    pre_environment: Any,
    steps: Sequence[Step],
    answer: str,
) -> bool:
    """Whether AgentDojo's security check finds the injection task's goal met after `steps`
    run (as AgentDojo's runtime runs them, failures included) on a copy of `pre_environment`
    and the model answers `answer`: the worst case a pair's script must really be."""
    from agentdojo.functions_runtime import FunctionCall, FunctionsRuntime

    environment = pre_environment.model_copy(deep=True)
    runtime = FunctionsRuntime(list(tools))
    trace = []
    for step in steps:
        runtime.run_function(environment, step.function, dict(step.args))
        trace.append(FunctionCall(function=step.function, args=dict(step.args)))
    met = injection_task.security_from_traces(answer, pre_environment, environment, trace)
    if met is None:  # AgentDojo's order: the traces first, then the environments
        met = injection_task.security(answer, pre_environment, environment)
    return bool(met)


def _json_args(task_id: str, function: str, args: Mapping[str, Any]) -> dict[str, Any]:
    try:
        text = json.dumps(dict(args), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise GroundTruthError(
            f"{task_id}: the arguments of its ground-truth call {function} are not JSON "
            f"({exc}); a replay script can only propose JSON arguments"
        ) from exc
    loaded: dict[str, Any] = json.loads(text)
    return loaded
