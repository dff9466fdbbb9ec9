"""A replay run is byte-identical every time: twice, under two hash seeds, serial or parallel,
and equal to the recorded baseline. `run_id` is the one field allowed to differ.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from governance import StoreSpec, canonical_json
from harness._baseline import load_baseline, load_baseline_traces
from harness._scenario_load import LoadedScenario
from harness._scenario_runner import ProviderChoice, run_scenario
from harness._suite import load_checked_suite, run_checked_suite
from harness._suite_check import replayable
from harness._trace import Trace

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SEEDS = ("1", "2024")
_RUN_ID_FIELD = re.compile(rb'"run_id":"[^"]*",')


@pytest.fixture(scope="module")
def suite() -> list[LoadedScenario]:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO)
        # the replay suite: live-only scenarios (no script, scenarios/live/) cannot replay
        return replayable(load_checked_suite([REPO / "scenarios"]))  # type: ignore[return-value]


@pytest.fixture(scope="module")
def serial(suite: list[LoadedScenario]) -> list[Trace]:
    return run_checked_suite(suite, provider=ProviderChoice(), run_id="run-serial").traces


def stable_bytes(traces: Sequence[Trace]) -> dict[str, bytes]:
    return {t.scenario_id: canonical_json(t.stable_dict()) for t in traces}


def _env(seed: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROCTOR_")}
    env["PYTHONHASHSEED"] = seed
    return env


@pytest.fixture(scope="module")
def subprocess_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Report dirs of `proctor run` under each seed, plus a gated --fail-on-drift run, in parallel.

    Keyed by seed, and "gate" for the gated run (whose exit code is stored in `gate.rc`).
    """
    out = tmp_path_factory.mktemp("determinism")
    runs = {seed: ["--no-baseline"] for seed in SEEDS}
    runs["gate"] = ["--baseline", "baselines/baseline.json", "--fail-on-drift"]
    started = {
        name: subprocess.Popen(
            [sys.executable, "-m", "harness", "run", *flags, "--report-dir", str(out / name)],
            cwd=REPO,
            env=_env("7" if name == "gate" else name),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, flags in runs.items()
    }
    for name, process in started.items():
        with process:
            stdout, stderr = process.communicate(timeout=180)
        (out / f"{name}.rc").write_text(str(process.returncode))
        (out / f"{name}.log").write_text(stdout + stderr)
    return {name: out / name for name in runs}


def written_traces(report_dir: Path) -> tuple[dict[str, bytes], set[str]]:
    """Each written trace with its run_id field cut out of the bytes, and the run ids seen."""
    stripped: dict[str, bytes] = {}
    run_ids: set[str] = set()
    for path in sorted((report_dir / "traces").glob("*.json")):
        raw = path.read_bytes()
        assert canonical_json(json.loads(raw)) == raw, f"{path.name} is not canonical JSON"
        run_ids.add(json.loads(raw)["run_id"])
        cut, count = _RUN_ID_FIELD.subn(b"", raw)
        assert count == 1, path.name
        stripped[path.stem] = cut
    return stripped, run_ids


def test_the_suite_run_twice_differs_only_in_its_run_id(
    suite: list[LoadedScenario], serial: list[Trace]
) -> None:
    again = run_checked_suite(suite, provider=ProviderChoice(), run_id="run-again").traces
    assert [t.scenario_id for t in again] == [item.scenario.id for item in suite]
    assert stable_bytes(again) == stable_bytes(serial)
    for first, second in zip(serial, again, strict=True):
        assert first.canonical() != second.canonical()
        assert first.canonical().replace(b'"run-serial"', b'"run-again"') == second.canonical()
        assert b"run-serial" not in canonical_json(first.stable_dict())
        assert first.digest == second.digest


def test_two_hash_seeds_write_identical_traces_but_for_the_run_id(
    subprocess_runs: dict[str, Path], serial: list[Trace]
) -> None:
    for seed in SEEDS:
        log = (subprocess_runs[seed].parent / f"{seed}.log").read_text()
        assert (subprocess_runs[seed].parent / f"{seed}.rc").read_text() == "0", log
    first, first_ids = written_traces(subprocess_runs[SEEDS[0]])
    second, second_ids = written_traces(subprocess_runs[SEEDS[1]])
    assert sorted(first) == sorted(t.scenario_id for t in serial)
    assert first == second
    assert first == stable_bytes(serial)  # and equal to this process's run, whatever its seed
    assert len(first_ids) == len(second_ids) == 1
    assert first_ids != second_ids


def test_serial_and_parallel_runs_give_identical_traces(
    suite: list[LoadedScenario], serial: list[Trace]
) -> None:
    parallel = run_checked_suite(suite, provider=ProviderChoice(), jobs=2, run_id="run-j2").traces
    assert [t.scenario_id for t in parallel] == [t.scenario_id for t in serial]
    assert stable_bytes(parallel) == stable_bytes(serial)


@pytest.mark.parametrize(
    "on_disk", [StoreSpec("sqlite", durability="os"), StoreSpec("sqlite", durability="fsync")]
)
def test_a_file_store_writes_the_same_traces_as_the_memory_store(
    suite: list[LoadedScenario], serial: list[Trace], on_disk: StoreSpec
) -> None:
    # Scenario runs use the ephemeral store; nothing in a trace may depend on that choice.
    traces = [
        run_scenario(item, run_id="run-serial", provider=ProviderChoice(), store=on_disk)
        for item in suite
    ]
    assert [t.scenario_id for t in traces] == [t.scenario_id for t in serial]
    assert {t.scenario_id: t.canonical() for t in traces} == {
        t.scenario_id: t.canonical() for t in serial
    }


def test_the_recorded_baseline_matches_a_fresh_run(
    serial: list[Trace], subprocess_runs: dict[str, Path]
) -> None:
    baseline = load_baseline(REPO / "baselines" / "baseline.json")
    stored = load_baseline_traces(REPO / "baselines" / "traces")
    assert sorted(baseline.scenarios) == sorted(t.scenario_id for t in serial)
    assert sorted(stored) == sorted(baseline.scenarios)
    drifted = [
        t.scenario_id for t in serial if t.digest != baseline.scenarios[t.scenario_id].trace_digest
    ]
    assert drifted == [], "re-record the baseline or find the nondeterminism"
    for trace in serial:
        assert stored[trace.scenario_id] == trace.stable_dict()

    gate_log = (subprocess_runs["gate"].parent / "gate.log").read_text()
    assert (subprocess_runs["gate"].parent / "gate.rc").read_text() == "0", gate_log
    assert "Drifted scenarios" not in gate_log
