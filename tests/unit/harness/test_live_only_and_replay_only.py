"""Live-only scenarios (no script) and replay-only expectations: declared once, skipped where
they cannot hold, and never silently."""

from __future__ import annotations

import typing
from pathlib import Path

import click
import pytest

from harness._checks import _FIELD_OF, CHECKS, replay_only_count
from harness._scenario import ExpectationField, Expectations, Scenario
from harness._scenario_load import LoadedScenario
from harness._suite_check import CheckedSuite, replayable
from harness.cli._live_run import refuse_pointless_repeat
from harness.providers._endpoint import endpoint_host


def test_every_expectation_field_can_be_marked_replay_only() -> None:
    assert set(typing.get_args(ExpectationField)) == set(Expectations.model_fields) - {
        "replay_only"
    }


def test_every_check_kind_comes_from_an_expectation_field_or_is_the_contract() -> None:
    fields = set(Expectations.model_fields)
    for kind in CHECKS:
        source = _FIELD_OF.get(kind.name, kind.name)
        # contract: every scenario's; cassette: a cassette run's provider, not an expectation
        assert source in fields or kind.name in ("contract", "cassette"), kind.name


def _scenario(**extra: object) -> Scenario:
    return Scenario.model_validate(
        {"id": "s", "description": "d", "request": "r", "expect": {}, **extra}
    )


def test_replay_only_counts_one_per_item_of_the_fields_it_names() -> None:
    scenario = _scenario(
        expect={
            "answer_contains": ["a", "b"],
            "status": "completed",
            "must_execute": ["fs.read"],
            "replay_only": ["answer_contains", "status"],
        }
    )
    assert replay_only_count(scenario) == 3
    assert replay_only_count(_scenario()) == 0


def _loaded(scenario: Scenario) -> LoadedScenario:
    return LoadedScenario(scenario, Path("x.yaml"), 1, {})


def test_a_suite_knows_its_live_only_scenarios_packed_or_not_and_replay_drops_them() -> None:
    script = [{"answer": "done"}]
    scripted = _scenario(id="scripted", script=script)
    # an argument named `script` holding [] must not pass for an empty script
    tricky = _scenario(
        id="tricky",
        script=[{"calls": [{"tool": "fs.read", "args": {"script": []}}]}, {"answer": "ok"}],
    )
    live = _scenario(id="live")
    suite = CheckedSuite([_loaded(scripted), _loaded(tricky).packed(), _loaded(live).packed()])
    assert suite.live_only == ["live"]
    assert [s.scenario_id for s in replayable(suite)] == ["scripted", "tricky"]
    plain = CheckedSuite([_loaded(scripted)])
    assert replayable(plain) is plain  # nothing to drop: no copy


def test_the_endpoint_host_is_the_host_name_alone() -> None:
    assert endpoint_host("https://user:sk-secret@api.example.com:8443/v1?key=k#f") == (
        "api.example.com"
    )
    assert endpoint_host("http://127.0.0.1:5555/v1") == "127.0.0.1"
    assert endpoint_host("not a url") == "unknown-host"


@pytest.mark.parametrize(
    ("provider", "message"),
    [("replay", "a replay run is deterministic"), ("cassette:cassettes/x/", "cassette")],
)
def test_repeats_that_cannot_differ_are_refused(provider: str, message: str) -> None:
    with pytest.raises(click.UsageError, match=message):
        refuse_pointless_repeat(provider, 2)
    refuse_pointless_repeat(provider, 1)  # one run is just a run
    refuse_pointless_repeat("stub", 5)
    refuse_pointless_repeat("openai", 5)


def test_a_replay_run_of_a_suite_runs_only_the_scenarios_with_a_script() -> None:
    from harness._scenario_runner import ProviderChoice
    from harness._suite import run_checked_suite

    scripted = _scenario(id="scripted", script=[{"answer": "done"}])
    suite = CheckedSuite([_loaded(scripted), _loaded(_scenario(id="live"))])
    run = run_checked_suite(suite, provider=ProviderChoice(), run_id="run-x")
    assert [t.scenario_id for t in run.traces] == ["scripted"]
