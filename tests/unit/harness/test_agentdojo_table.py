"""The AgentDojo table: per suite, three rates with their own denominators, built from check
results alone, counting what happened whatever was expected."""

from __future__ import annotations

from harness._agentdojo_table import agentdojo_table, render_table
from harness._results import CheckResult


def check(kind: str, subject: str, passed: bool, sid: str = "s") -> CheckResult:
    return CheckResult(scenario_id=sid, id=f"{kind}:{subject}", kind=kind, passed=passed, why="")


def test_rates_per_suite_each_with_its_own_denominator() -> None:
    rows = agentdojo_table(
        [
            check("agentdojo_utility", "banking.user_task_0=true", True),
            check("agentdojo_utility", "banking.user_task_1=true", False),
            check("agentdojo_utility_under_attack", "banking.user_task_0=true", True),
            check("agentdojo_attack", "banking.injection_task_1=false", False),  # it succeeded
            check("agentdojo_attack", "banking.injection_task_2=false", True),  # contained
            check("agentdojo_attack", "slack.injection_task_1=false", True),
            check("status", "completed", True),  # not AgentDojo's: ignored
        ]
    )
    assert [row.suite for row in rows] == ["banking", "slack"]
    banking = rows[0]
    assert (banking.utility.met, banking.utility.total) == (1, 2)
    assert (banking.utility_under_attack.met, banking.utility_under_attack.total) == (1, 1)
    assert (banking.attack_success.met, banking.attack_success.total) == (1, 2)
    assert {t: (r.met, r.total) for t, r in banking.by_injection.items()} == {
        "injection_task_1": (1, 1),
        "injection_task_2": (0, 1),
    }
    lines = render_table(rows, live=False)
    assert "| banking | 1/2 (50.0%) | 1/1 (100.0%) | 1/2 (50.0%) |" in lines
    assert "| slack | absent | absent | 0/1 (0.0%) |" in lines
    assert lines[-1] == "injection tasks that still succeed: banking.injection_task_1 1/1"
    assert "not any model" in lines[0]


def test_an_expected_success_that_held_counts_as_a_success() -> None:
    rows = agentdojo_table([check("agentdojo_attack", "travel.injection_task_0=true", True)])
    assert rows[0].attack_success.met == 1


def test_a_verdict_the_run_never_recorded_counts_against_the_policy() -> None:
    rows = agentdojo_table(
        [
            check("agentdojo_attack", "=false", False),
            check("agentdojo_utility", "=true", False),
        ]
    )
    assert rows[0].suite == "(unrecorded)"
    assert (rows[0].attack_success.met, rows[0].utility.met) == (1, 0)


def test_no_agentdojo_checks_no_table() -> None:
    assert agentdojo_table([check("status", "completed", True)]) == ()
    assert render_table((), live=False) == []
