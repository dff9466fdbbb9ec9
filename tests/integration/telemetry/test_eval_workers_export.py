"""`-j` workers with export on: still forked (the parent's telemetry has seen nothing and runs
no thread), and each worker, forked or from a forkserver, exports its scenarios' spans itself."""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import threading
from pathlib import Path

import pytest

import harness._suite_workers as workers
from governance.telemetry import Telemetry, telemetry_config
from harness._scenario_load import LoadedScenario
from harness._scenario_runner import ProviderChoice
from harness._suite import load_checked_suite, run_checked_suite
from tests.otel_receiver import OtlpReceiver

pytestmark = pytest.mark.slow

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"


def _suite() -> list[LoadedScenario]:
    return load_checked_suite([SCENARIOS / "reads.yaml", SCENARIOS / "blocks.yaml"])


def _exported_with_two_workers(tmp_path: Path, suite: list[LoadedScenario]) -> list[str]:
    """The scenarios whose run spans the receiver got from a -j 2 run exporting to it."""
    with OtlpReceiver(tmp_path) as receiver:
        environ = {"PROCTOR_OTEL_ENDPOINT": receiver.endpoint}
        config = telemetry_config(flag=True, environ=environ)
        assert config is not None
        telemetry = Telemetry.start(config, service_role="eval")
        try:
            run_checked_suite(suite, provider=ProviderChoice(), jobs=2, telemetry=telemetry)
        finally:
            telemetry.shutdown()
        spans = receiver.spans()
    return sorted(
        s["attributes"]["proctor.scenario.id"] for s in spans if s["name"] == "invoke_agent proctor"
    )


def test_a_parent_exporting_nothing_yet_still_forks_its_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if threading.active_count() != 1:
        pytest.skip("another thread runs in this test process: workers never fork here")
    chosen: list[str] = []
    real = workers.worker_context

    def spied() -> multiprocessing.context.BaseContext:
        context = real()
        chosen.append(context.get_start_method())
        return context

    monkeypatch.setattr(workers, "worker_context", spied)
    suite = _suite()
    exported = _exported_with_two_workers(tmp_path, suite)
    assert chosen == ["fork"]
    assert exported == sorted(item.scenario_id for item in suite)


def test_forkserver_workers_start_their_own_export_from_the_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([workers.__name__])
    monkeypatch.setattr(workers, "worker_context", lambda: context)
    suite = _suite()
    exported = _exported_with_two_workers(tmp_path, suite)
    assert exported == sorted(item.scenario_id for item in suite)
