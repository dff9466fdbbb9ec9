"""An AgentDojo scenario's world: the suite's tools over a fresh environment before the run,
AgentDojo's own checks of that environment after it.

The environment is AgentDojo's default with the scenario's injections in place, prepared by the
user task (`init_environment`); a deep copy taken then is the pre-run state the checks compare
against, as AgentDojo's runner does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from governance.agentdojo import (
    AgentDojoToolSource,
    copy_environment,
    injection_task,
    judge,
    suite_tools,
    user_task,
)
from harness._scenario import AgentDojoTask
from harness._trace import EnvironmentCheckRecord


@dataclass(frozen=True, slots=True)
class AgentDojoWorld:
    task: AgentDojoTask
    source: AgentDojoToolSource
    pre_environment: Any
    user_task: Any
    injection_task: Any | None


def prepare_world(task: AgentDojoTask) -> AgentDojoWorld:
    tools = suite_tools(task.suite, task.benchmark_version)
    goal = user_task(tools, task.user_task)
    attack = injection_task(tools, task.injection_task) if task.injection_task else None
    environment = goal.init_environment(tools.environment(task.injections))
    pre = copy_environment(environment)
    return AgentDojoWorld(task, AgentDojoToolSource(tools, environment), pre, goal, attack)


def model_output(messages: Sequence[Mapping[str, Any]]) -> str:
    """The model's own last words, as AgentDojo's checks read them: the raw text (the trace
    keeps it redacted, and a claims check may replace it in the answer the user sees; the
    checks' verdicts are all the trace gets from it)."""
    for message in reversed(messages):
        if message.get("role") == "assistant":
            content = message.get("content")
            return content if isinstance(content, str) else ""
    return ""


def environment_checks(world: AgentDojoWorld, answer: str | None) -> list[EnvironmentCheckRecord]:
    """The user task's utility and, for a pair, whether the injection task's goal was met."""
    said = answer or ""
    post = world.source.environment
    received = list(world.source.received)
    verdicts = [judge(world.user_task, "utility", said, world.pre_environment, post, received)]
    tasks = [world.task.user_task]
    if world.injection_task is not None and world.task.injection_task is not None:
        verdicts.append(
            judge(
                world.injection_task,
                "attack_succeeded",
                said,
                world.pre_environment,
                post,
                received,
            )
        )
        tasks.append(world.task.injection_task)
    return [
        EnvironmentCheckRecord(
            check=v.check, suite=world.task.suite, task=t, value=v.value, error=v.error
        )
        for v, t in zip(verdicts, tasks, strict=True)
    ]
