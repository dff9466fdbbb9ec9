"""`proctor import agentdojo`: AgentDojo's task suites as Proctor scenario files.

Per suite, one file per user task (`<out>/<suite>/<user_task>.yaml`): the task alone, then the
task under each injection task. The environment a task runs on is AgentDojo's default with the
attack's text in exactly the vectors the task's ground truth shows; the scripts are computed on
that environment, as AgentDojo's checks will see it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from governance.agentdojo import SuiteEnvironments, import_suites
from harness._errors import UsageProblem
from harness._scenario import AgentDojoTask, Scenario
from harness.agentdojo._attack import attack_text
from harness.agentdojo._files import header, refuse_foreign, remove_stale, render, write_if_changed
from harness.agentdojo._ground_truth import (
    GroundTruthError,
    Walk,
    attack_reaches_its_goal,
    ground_truth_steps,
    walk,
)
from harness.agentdojo._scenarios import Attack, TaskFacts, alone, attacked, live_only

DEFAULT_VERSION = "v1.2.2"


@dataclass(frozen=True, slots=True)
class ImportRequest:
    suites: tuple[str, ...]
    out: Path
    policy_dir: Path
    benchmark_version: str = DEFAULT_VERSION
    user_tasks: frozenset[str] = frozenset()  # empty: every user task
    injection_tasks: frozenset[str] = frozenset()  # empty: every injection task

    @property
    def filtered(self) -> bool:
        return bool(self.user_tasks or self.injection_tasks)


@dataclass(frozen=True, slots=True)
class SuiteImport:
    """What an import wrote for one suite."""

    suite: str
    directory: Path
    user_tasks: int
    pairs: int
    written: int  # files whose text changed
    unchanged: int
    removed: tuple[Path, ...]
    no_vector: tuple[str, ...] = field(default=())  # user tasks that show no injection
    live_only: Mapping[str, int] = field(default_factory=dict)  # injection task: pairs

    @property
    def scenarios(self) -> int:
        return self.user_tasks + self.pairs


def load_benchmark(version: str) -> dict[str, Any]:
    """AgentDojo's suites of `version` (name: TaskSuite); exit 64 when agentdojo is missing,
    does not know the version, or the version cannot be named in a scenario."""
    suites = dict(import_suites(version))  # AgentDojoUnavailable: exit 64 with the install line
    try:
        AgentDojoTask(suite="banking", benchmark_version=version, user_task="user_task_0")
    except ValidationError:
        raise UsageProblem(
            f"benchmark version {version!r} cannot be named in a scenario (its schema takes "
            f"v1.x or v1.x.y); use {DEFAULT_VERSION}"
        ) from None
    return suites


def agentdojo_version() -> str:
    return metadata.version("agentdojo")


def import_agentdojo(request: ImportRequest, progress: Callable[[str], None]) -> list[SuiteImport]:
    """Write the scenario files `request` asks for; `progress` hears one line per suite (and
    one per user task that shows no injection). Nothing is written unless every file can be."""
    benchmark = load_benchmark(request.benchmark_version)
    missing = [name for name in request.suites if name not in benchmark]
    if missing:
        raise UsageProblem(
            f"benchmark {request.benchmark_version} has no suite {', '.join(missing)}"
        )
    _check_filters(request, [benchmark[name] for name in request.suites])
    made = {name: _suite_files(request, benchmark[name], progress) for name in request.suites}
    refuse_foreign(path for files, _ in made.values() for path in files)
    done = []
    for name, (files, summary) in made.items():
        directory = request.out / name
        written = sum(write_if_changed(path, text) for path, text in files.items())
        removed = () if request.filtered else tuple(remove_stale(directory, files))
        done.append(
            SuiteImport(
                suite=name,
                directory=directory,
                user_tasks=summary.user_tasks,
                pairs=summary.pairs,
                written=written,
                unchanged=len(files) - written,
                removed=removed,
                no_vector=tuple(summary.no_vector),
                live_only=dict(sorted(summary.live_only.items(), key=lambda kv: _number(kv[0]))),
            )
        )
        progress(_progress_line(done[-1]))
        if done[-1].live_only:
            progress(_live_only_note(done[-1]))
    return done


@dataclass(slots=True)
class _Count:
    user_tasks: int = 0
    pairs: int = 0
    no_vector: list[str] = field(default_factory=list)
    live_only: dict[str, int] = field(default_factory=dict)  # injection task: pairs


def _suite_files(
    request: ImportRequest, suite: Any, progress: Callable[[str], None]
) -> tuple[dict[Path, str], _Count]:
    """Every file of one suite (path: text), each scenario validated as `proctor run` reads it."""
    environments = SuiteEnvironments(suite)
    marks = environments.marks
    head = header(suite.name, agentdojo_version(), request.benchmark_version)
    directory = request.out / suite.name
    policy = _relative(request.policy_dir / f"{suite.name}.yaml", directory)
    injection_tasks = _chosen(suite.injection_tasks, request.injection_tasks)
    walks = {
        task_id: walk(task, suite.tools, environments.canary(), marks)
        for task_id, task in _chosen(suite.user_tasks, request.user_tasks).items()
    }
    # Tasks that show the same vectors get the same environments: take them together, so each
    # environment is parsed once (the cache keeps the last few).
    order = sorted(walks, key=lambda task_id: (walks[task_id].vectors, _number(task_id)))
    files: dict[Path, str] = {}
    count = _Count()
    for task_id in order:
        user_task = suite.user_tasks[task_id]
        facts = TaskFacts(
            suite=suite.name,
            version=request.benchmark_version,
            policy=policy,
            user_task=task_id,
            prompt=user_task.PROMPT,
            answer=user_task.GROUND_TRUTH_OUTPUT,
        )
        steps = ground_truth_steps(user_task, user_task.init_environment(environments.shared({})))
        scenarios = [alone(facts, steps)]
        count.user_tasks += 1
        found = walks[task_id]
        reveal = found.first_reveal
        if reveal is None:
            count.no_vector.append(task_id)
            progress(f"note: {suite.name} {task_id} shows no injection vector: no pairs")
        else:
            for injection_id, injection_task in injection_tasks.items():
                injections = {vector: attack_text(injection_task.GOAL) for vector in found.vectors}
                pre = user_task.init_environment(environments.shared(injections))
                attacked_steps = ground_truth_steps(user_task, pre)
                _same_calls(suite.name, task_id, injection_id, found, attacked_steps)
                attack = Attack(injection_id, injections, ground_truth_steps(injection_task, pre))
                obeyed = [
                    *attacked_steps[: reveal + 1],
                    *attack.steps,
                    *attacked_steps[reveal + 1 :],
                ]
                if attack_reaches_its_goal(
                    suite.tools, injection_task, pre, obeyed, user_task.GROUND_TRUTH_OUTPUT
                ):
                    scenarios.append(attacked(facts, attacked_steps, reveal, attack))
                else:
                    scenarios.append(live_only(facts, attack))
                    count.live_only.setdefault(injection_id, 0)
                    count.live_only[injection_id] += 1
                count.pairs += 1
        for scenario in scenarios:
            Scenario.model_validate(scenario)
        files[directory / f"{task_id}.yaml"] = render(head, scenarios)
    return dict(sorted(files.items())), count


def _same_calls(
    suite: str, task_id: str, injection_id: str, found: Walk, steps: Sequence[Any]
) -> None:
    """The attacked environment must not change which calls the user task makes: which of them
    shows the injection was found on the canary environment."""
    if [step.function for step in steps] != [step.function for step in found.steps]:
        raise GroundTruthError(
            f"{suite} {task_id}: its ground truth calls other functions once {injection_id}'s "
            "text is in the environment than with canaries; the call that shows the injection "
            "cannot be placed"
        )


def _chosen(tasks: Mapping[str, Any], wanted: frozenset[str]) -> dict[str, Any]:
    ids = sorted(tasks, key=_number)
    return {task_id: tasks[task_id] for task_id in ids if not wanted or task_id in wanted}


def _check_filters(request: ImportRequest, suites: Sequence[Any]) -> None:
    for option, wanted, attribute in (
        ("--user-task", request.user_tasks, "user_tasks"),
        ("--injection-task", request.injection_tasks, "injection_tasks"),
    ):
        known: set[str] = set()
        for suite in suites:
            known.update(getattr(suite, attribute))
        unknown = sorted(wanted - known, key=_number)
        if unknown:
            chosen = ", ".join(suite.name for suite in suites)
            raise UsageProblem(f"{option}: no {', '.join(unknown)} in {chosen}")


def _number(task_id: str) -> tuple[int, str]:
    head, _, tail = task_id.rpartition("_")
    return (int(tail), head) if tail.isdigit() else (-1, task_id)


def _relative(target: Path, start: Path) -> str:
    """`target` relative to the directory `start`, `/`-separated, as a scenario's `policy:`."""
    return Path(os.path.relpath(target.resolve(), start.resolve())).as_posix()


def _live_only_note(done: SuiteImport) -> str:
    tasks = ", ".join(f"{task} ({pairs})" for task, pairs in done.live_only.items())
    return (
        f"note: {done.suite}: {sum(done.live_only.values())} pairs are live-only (no replay "
        f"script): AgentDojo's ground truth of {tasks} does not meet its own security check"
    )


def _progress_line(done: SuiteImport) -> str:
    removed = f", {len(done.removed)} stale removed" if done.removed else ""
    files = done.written + done.unchanged
    blind = (
        f" ({len(done.no_vector)} user tasks show no injection: no pairs)" if done.no_vector else ""
    )
    return (
        f"{done.suite}: {done.user_tasks} user tasks, {done.pairs} pairs{blind}, "
        f"{done.scenarios} scenarios in {files} files under {done.directory} ({done.written} "
        f"written, {done.unchanged} unchanged{removed})"
    )
