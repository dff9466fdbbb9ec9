"""The generator's environments equal AgentDojo's own loading, injections and all."""

from __future__ import annotations

from typing import Any

import pytest

from governance.agentdojo import SuiteEnvironments
from harness.agentdojo._attack import attack_text

SUITE_NAMES = ("workspace", "travel", "banking", "slack")
# Texts that YAML does not read back verbatim in every place a vector sits: line breaks that a
# plain scalar folds, quotes, a colon and a dash that could start a key or a list item.
AWKWARD = "first line\n\n  \"quoted\": 'single' - item: #not a comment\n"


@pytest.mark.parametrize("name", SUITE_NAMES)
def test_an_environment_equals_agentdojos_for_defaults_canaries_and_attack_texts(
    suites: dict[str, Any], name: str
) -> None:
    suite = suites[name]
    environments = SuiteEnvironments(suite)
    vectors = sorted(environments.defaults)
    goal = next(iter(suite.injection_tasks.values())).GOAL
    cases: list[dict[str, str]] = [
        {},
        dict(environments.marks),
        dict.fromkeys(vectors, attack_text(goal)),
        {vectors[0]: attack_text(goal)},
        {vectors[-1]: AWKWARD},
    ]
    for injections in cases:
        try:
            theirs = suite.load_and_inject_default_environment(injections)
        except Exception as exc:  # AgentDojo cannot read it either: neither may we
            with pytest.raises(type(exc)):
                environments.load(injections)
            continue
        assert environments.load(injections) == theirs, sorted(injections)


def test_a_loaded_environment_is_a_copy_that_a_run_may_change(suites: dict[str, Any]) -> None:
    environments = SuiteEnvironments(suites["banking"])
    first = environments.load({})
    first.bank_account.balance = -1.0
    assert environments.load({}).bank_account.balance != -1.0
    assert environments.shared({}).bank_account.balance != -1.0


def test_an_unknown_vector_is_refused_by_name(suites: dict[str, Any]) -> None:
    environments = SuiteEnvironments(suites["banking"])
    with pytest.raises(ValueError, match="no_such_vector"):
        environments.load({"no_such_vector": "x"})
