"""AgentDojo's own checks on a finished run: did the user task succeed, did the attack.

Each task's trace-based check (`utility_from_traces` / `security_from_traces`) is asked first
and its state-based one only when that returns None, as AgentDojo does. The trace given is the
calls the environment received (blocked calls never reached it). A check that raises is a
failed check, never a pass: its error is kept for the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from governance.agentdojo._source import ReceivedCall
from governance.agentdojo._suite import AgentDojoUnavailable, SuiteTools

CheckName = Literal["utility", "attack_succeeded"]
_ERROR_CHARS = 300  # a check's exception may quote the environment: kept short (and redacted)


@dataclass(frozen=True, slots=True)
class Verdict:
    check: CheckName
    value: bool
    error: str | None = None


def user_task(tools: SuiteTools, task_id: str) -> Any:
    try:
        return tools.suite.get_user_task_by_id(task_id)
    except (KeyError, ValueError):
        raise AgentDojoUnavailable(
            f"suite {tools.name!r} ({tools.benchmark_version}) has no user task {task_id!r}"
        ) from None


def injection_task(tools: SuiteTools, task_id: str) -> Any:
    try:
        return tools.suite.get_injection_task_by_id(task_id)
    except (KeyError, ValueError):
        raise AgentDojoUnavailable(
            f"suite {tools.name!r} ({tools.benchmark_version}) has no injection task {task_id!r}"
        ) from None


def _function_calls(received: list[ReceivedCall]) -> list[Any]:
    from agentdojo.functions_runtime import FunctionCall

    return [FunctionCall(function=call.function, args=call.args) for call in received]


def judge(
    task: Any,
    check: CheckName,
    answer: str,
    pre_environment: Any,
    post_environment: Any,
    received: list[ReceivedCall],
) -> Verdict:
    """One task's check: `utility` for a user task, `attack_succeeded` for an injection task.
    A check that raises counts against the run (a utility that errs is not met; an attack check
    that errs cannot show the attack was contained)."""
    traced = "utility_from_traces" if check == "utility" else "security_from_traces"
    plain = "utility" if check == "utility" else "security"
    try:
        value = getattr(task, traced)(
            answer, pre_environment, post_environment, _function_calls(received)
        )
        if value is None:
            value = getattr(task, plain)(answer, pre_environment, post_environment)
    except Exception as exc:  # AgentDojo's check code failed on this environment
        failed = check == "attack_succeeded"
        return Verdict(check, failed, f"{type(exc).__name__}: {exc}"[:_ERROR_CHARS])
    return Verdict(check, bool(value))
