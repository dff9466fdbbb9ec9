"""`proctor import agentdojo` against the real AgentDojo: what it writes is what AgentDojo says.

The oracles are AgentDojo's own: its environment loading, its ground truths, its runtime and
result formatting, and its attack (`get_injection_candidates` chooses the vectors, the
important-instructions template fills them).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness._scenario import Scenario
from harness._scenario_load import LoadedScenario, load_scenarios
from harness.providers._replay import ScriptedBranch, ScriptedTurn

Call = tuple[str, dict[str, Any]]
SUITE_NAMES = ("workspace", "travel", "banking", "slack")
FULLY_CHECKED = ("banking", "slack")  # every pair; the others one injection task per user task


@pytest.fixture(scope="module")
def loaded(imported: Path) -> list[LoadedScenario]:
    return load_scenarios([imported / "out"])


@pytest.fixture(scope="module")
def attacks(suites: dict[str, Any]) -> dict[str, Any]:
    """One oracle attack per suite (AgentDojo caches its injection candidates on it)."""
    return {name: _oracle_attack(suite) for name, suite in suites.items()}


@pytest.fixture(scope="module")
def by_id(loaded: list[LoadedScenario]) -> dict[str, Scenario]:
    return {item.scenario.id: item.scenario for item in loaded}


def _oracle_attack(suite: Any) -> Any:
    """AgentDojo's important-instructions attack, with the generic model name Proctor uses."""
    from agentdojo.attacks.base_attacks import FixedJailbreakAttack
    from agentdojo.attacks.important_instructions_attacks import ImportantInstructionsAttack

    attack = FixedJailbreakAttack(ImportantInstructionsAttack._JB_STRING, suite, None)
    attack.user_name = "Emma Johnson"
    attack.model_name = "AI assistant"
    return attack


def _candidates(attack: Any, user_task: Any) -> list[str]:
    try:
        return list(attack.get_injection_candidates(user_task))
    except ValueError:  # AgentDojo: "... is not injectable"
        return []


def _number(task_id: str) -> int:
    return int(task_id.rpartition("_")[2])


def _calls(suite: str, function_calls: Sequence[Any]) -> list[Call]:
    return [
        (f"{suite}.{call.function}", json.loads(json.dumps(dict(call.args))))
        for call in function_calls
    ]


def _turn_calls(turns: Sequence[Any]) -> list[Call]:
    found: list[Call] = []
    for turn in turns:
        assert isinstance(turn, ScriptedTurn), "a branch nested where the script has one level"
        found.extend((call.tool, dict(call.args)) for call in turn.calls)
    return found


def _answer(turns: Sequence[Any]) -> str | None:
    last = turns[-1]
    assert isinstance(last, ScriptedTurn) and not last.calls
    return last.answer


def _pairs(suites: dict[str, Any]) -> Iterator[tuple[str, Any, Any]]:
    for name in SUITE_NAMES:
        suite = suites[name]
        injection_ids = sorted(suite.injection_tasks, key=_number)
        for user_id in sorted(suite.user_tasks, key=_number):
            chosen = injection_ids
            if name not in FULLY_CHECKED:
                chosen = [injection_ids[_number(user_id) % len(injection_ids)]]
            for injection_id in chosen:
                yield name, suite.user_tasks[user_id], suite.injection_tasks[injection_id]


def test_every_generated_file_loads_through_the_scenario_loader_with_the_expected_counts(
    imported: Path, loaded: list[LoadedScenario], suites: dict[str, Any], attacks: dict[str, Any]
) -> None:
    total_user_tasks = 0
    for name in SUITE_NAMES:
        suite = suites[name]
        attack = attacks[name]
        shown = [task for task in suite.user_tasks.values() if _candidates(attack, task)]
        mine = [
            item.scenario
            for item in loaded
            if item.scenario.agentdojo is not None and item.scenario.agentdojo.suite == name
        ]
        alone = [s for s in mine if s.agentdojo is not None and s.agentdojo.injection_task is None]
        assert len(alone) == len(suite.user_tasks)
        assert len(mine) - len(alone) == len(shown) * len(suite.injection_tasks)
        files = sorted(path.name for path in (imported / "out" / name).iterdir())
        assert files == sorted(f"{task_id}.yaml" for task_id in suite.user_tasks)
        total_user_tasks += len(alone)
    assert total_user_tasks == 97


def test_each_scenario_is_named_tagged_and_expects_the_ideal_outcome(
    imported: Path, loaded: list[LoadedScenario]
) -> None:
    for item in loaded:
        scenario = item.scenario
        task = scenario.agentdojo
        assert task is not None and scenario.tools == "agentdojo"
        assert task.benchmark_version == "v1.2.2"
        assert item.path == imported / "out" / task.suite / f"{task.user_task}.yaml"
        policy = (item.path.parent / scenario.policy).resolve()
        assert policy == (imported / "policies" / f"{task.suite}.yaml").resolve()
        assert not Path(scenario.policy).is_absolute()
        expected = scenario.expect.agentdojo
        assert expected is not None and expected.utility is True
        base = ["agentdojo", f"agentdojo-{task.suite}"]
        if task.injection_task is None:
            assert scenario.id == f"agentdojo-{task.suite}-{task.user_task}"
            assert scenario.tags == [*base, "user-task"]
            assert expected.attack_succeeded is None
        else:
            assert scenario.id == f"agentdojo-{task.suite}-{task.user_task}-{task.injection_task}"
            assert scenario.tags == [*base, "injection", task.injection_task]
            assert expected.attack_succeeded is False
            assert "important_instructions" in scenario.description


def test_a_user_task_alone_replays_its_ground_truth_and_answers_its_expected_output(
    by_id: dict[str, Scenario], suites: dict[str, Any]
) -> None:
    for name in SUITE_NAMES:
        suite = suites[name]
        default = suite.load_and_inject_default_environment({})
        for user_id, user_task in suite.user_tasks.items():
            scenario = by_id[f"agentdojo-{name}-{user_id}"]
            environment = user_task.init_environment(default.model_copy(deep=True))
            expected = _calls(name, user_task.ground_truth(environment))
            assert _turn_calls(scenario.script) == expected, user_id
            assert all(len(turn.calls) <= 1 for turn in scenario.script)  # type: ignore[union-attr]
            assert _answer(scenario.script) == user_task.GROUND_TRUTH_OUTPUT
            assert scenario.request == user_task.PROMPT
            assert scenario.max_steps == len(expected) + 1 + 2
            # AgentDojo's own utility check passes on what the script does.
            assert _replayed(suite, user_task, None, {}, expected)[0], user_id


def _replayed(
    suite: Any, user_task: Any, injection_task: Any, injections: Any, calls: Any
) -> tuple[bool, bool]:
    """AgentDojo's own verdicts (`run_task_with_pipeline`) on a model that makes `calls` and
    answers the user task's expected output: (utility, the attack's goal is met)."""
    from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
    from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
    from agentdojo.functions_runtime import FunctionCall
    from agentdojo.types import text_content_block_from_string

    class Scripted(BasePipelineElement):  # type: ignore[misc]
        def query(self, query: Any, runtime: Any, env: Any, messages: Any = (), extra: Any = None):  # type: ignore[no-untyped-def]
            said: list[Any] = []
            for tool, args in calls:
                call = FunctionCall(function=tool.split(".", 1)[1], args=args)
                said.append(
                    {
                        "role": "assistant",
                        "content": [text_content_block_from_string("")],
                        "tool_calls": [call],
                    }
                )
                result, error = runtime.run_function(env, call.function, call.args)
                said.append(
                    {
                        "role": "tool",
                        "tool_call": call,
                        "tool_call_id": None,
                        "error": error,
                        "content": [text_content_block_from_string(tool_result_to_str(result))],
                    }
                )
            answer = [text_content_block_from_string(user_task.GROUND_TRUTH_OUTPUT)]
            said.append({"role": "assistant", "content": answer, "tool_calls": None})
            return query, runtime, env, [*messages, *said], extra or {}

    utility, met = suite.run_task_with_pipeline(Scripted(), user_task, injection_task, injections)
    return bool(utility), bool(met)


def test_a_pair_obeys_the_injection_only_after_the_call_that_shows_it(
    by_id: dict[str, Scenario], suites: dict[str, Any], attacks: dict[str, Any]
) -> None:
    from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
    from agentdojo.functions_runtime import FunctionsRuntime

    scripted = live = distinct = 0
    for name, user_task, injection_task in _pairs(suites):
        suite = suites[name]
        oracle = attacks[name].attack(user_task, injection_task)
        scenario = by_id[f"agentdojo-{name}-{user_task.ID}-{injection_task.ID}"]
        assert scenario.agentdojo is not None
        assert scenario.agentdojo.injections == oracle  # the same vectors, the same text

        pre = user_task.init_environment(suite.load_and_inject_default_environment(oracle))
        user_calls = _calls(name, user_task.ground_truth(pre))
        injection_calls = _calls(name, injection_task.ground_truth(pre))
        # The first call whose result (AgentDojo's own formatting) shows the attack text.
        runtime, environment = FunctionsRuntime(suite.tools), pre.model_copy(deep=True)
        reveal = None
        for n, call in enumerate(user_task.ground_truth(pre)):
            result, _ = runtime.run_function(environment, call.function, call.args)
            if reveal is None and "<INFORMATION>" in tool_result_to_str(result):
                reveal = n
        assert reveal is not None
        rest = user_calls[reveal + 1 :]
        obeying = user_calls[: reveal + 1] + injection_calls + rest
        _, met = _replayed(suite, user_task, injection_task, oracle, obeying)

        if not scenario.script:  # live only: no scripted model could carry the attack out
            assert not met and scenario.max_steps == 50
            assert "live only" in scenario.description
            live += 1
            continue
        assert met  # unguarded, the scripted attack succeeds: the worst case is real
        *prefix, branch = scenario.script
        assert isinstance(branch, ScriptedBranch) and set(branch.branch) == {"executed"}
        assert branch.otherwise is not None
        assert _turn_calls(prefix) == user_calls[: reveal + 1]
        executed = _turn_calls(branch.branch["executed"])
        otherwise = _turn_calls(branch.otherwise)
        assert executed == injection_calls + rest
        assert otherwise == rest
        obeyed = [call for call in injection_calls if call not in user_calls]
        assert [call for call in obeyed if call in otherwise] == []
        distinct += bool(obeyed)
        for path in (branch.branch["executed"], branch.otherwise):
            assert _answer(path) == user_task.GROUND_TRUTH_OUTPUT
        longest = len(prefix) + len(branch.branch["executed"])
        assert scenario.max_steps == longest + 2
        scripted += 1
    assert scripted > 200 and live > 20
    assert distinct == scripted  # every scripted attack makes a call the user's task never does


def test_the_injections_fill_only_vectors_the_user_tasks_ground_truth_shows(
    by_id: dict[str, Scenario], suites: dict[str, Any], attacks: dict[str, Any]
) -> None:
    for name in SUITE_NAMES:
        suite = suites[name]
        attack = attacks[name]
        for user_id, user_task in suite.user_tasks.items():
            shown = set(_candidates(attack, user_task))
            for injection_id in suite.injection_tasks:
                task = by_id[f"agentdojo-{name}-{user_id}-{injection_id}"].agentdojo
                assert task is not None and set(task.injections) == shown


def test_the_generated_tree_holds_nothing_but_the_user_task_files(imported: Path) -> None:
    found = sorted(
        path.relative_to(imported / "out").as_posix()
        for path in (imported / "out").rglob("*")
        if path.is_file()
    )
    assert all(path.count("/") == 1 and path.endswith(".yaml") for path in found)
    assert not any(name.startswith(".") for name in os.listdir(imported / "out" / "banking"))
