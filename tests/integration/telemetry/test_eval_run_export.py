"""`proctor run --otel`, serial and `-j 2`, into a real OTLP/HTTP receiver: one trace per
scenario (its run span labelled with the scenario and the suite run, the model turns and the
governed calls under it), and replay traces byte-identical with export on, off, or failing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.otel_receiver import OtlpReceiver
from tests.small_suite import SMALL_IDS, build_small_suite

pytestmark = pytest.mark.slow

RUN_ID_FIELD = re.compile(rb'"run_id":"[^"]*"')
FAILED_EXPORT = "OpenTelemetry export failed"
RUN_TIMEOUT = 180  # a hang guard: a run with the endpoint down must not wait on it


@dataclass(frozen=True, slots=True)
class Run:
    code: int
    stderr: str
    run_id: str
    traces: dict[str, bytes]  # file name -> bytes, the suite run id cut out
    spans: list[dict[str, Any]]
    metrics: list[dict[str, Any]]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("otel-suite")
    build_small_suite(root)
    return root


def _run(suite: Path, out: Path, jobs: int, endpoint: str | None) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROCTOR_", "OTEL_"))}
    flags = ["--otel"] if endpoint is not None else []
    if endpoint is not None:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--no-baseline", "-j", str(jobs), *flags,
         "--report-dir", str(out)],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )  # fmt: skip
    return done.returncode, done.stderr


def _collected(
    out: Path,
    code: int,
    stderr: str,
    spans: list[dict[str, Any]],
    metrics: list[dict[str, Any]] | None = None,
) -> Run:
    run_id = json.loads((out / "report.json").read_text(encoding="utf-8"))["run_id"]
    traces = {
        path.name: RUN_ID_FIELD.sub(b'"run_id":""', path.read_bytes())
        for path in sorted((out / "traces").glob("*.json"))
    }
    return Run(code, stderr, run_id, traces, spans, metrics or [])


def _exported(suite: Path, tmp: Path, name: str, jobs: int, mode: str) -> Run:
    with OtlpReceiver(tmp, mode=mode) as receiver:
        code, stderr = _run(suite, tmp / name, jobs, receiver.endpoint)
        # Written before the receiver answered each export: complete once the run has ended.
        spans, metrics = receiver.spans(), receiver.metrics()
    return _collected(tmp / name, code, stderr, spans, metrics)


@pytest.fixture(scope="module")
def runs(suite: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], Run]:
    """The small suite run off, exported, and exported to an endpoint that is down (refusing
    connections; accepting and never answering), serial and with -j 2."""
    tmp = tmp_path_factory.mktemp("otel-runs")
    found: dict[tuple[str, int], Run] = {}
    for jobs in (1, 2):
        code, stderr = _run(suite, tmp / f"off-{jobs}", jobs, None)
        found["off", jobs] = _collected(tmp / f"off-{jobs}", code, stderr, [])
        found["on", jobs] = _exported(suite, tmp, f"on-{jobs}", jobs, "ok")
        found["hang", jobs] = _exported(suite, tmp, f"hang-{jobs}", jobs, "hang")
    # Refused: a receiver's port once it has stopped: nothing listens there any more.
    with OtlpReceiver(tmp) as gone:
        pass
    code, stderr = _run(suite, tmp / "refused-2", 2, gone.endpoint)
    found["refused", 2] = _collected(tmp / "refused-2", code, stderr, [])
    return found


def _by_trace(spans: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    traces: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for span in spans:
        traces[span["trace_id"]].append(span)
    return traces


@pytest.mark.parametrize("jobs", [1, 2])
def test_each_scenario_is_one_trace_whose_run_span_names_the_scenario_and_the_suite_run(
    runs: dict[tuple[str, int], Run], jobs: int
) -> None:
    run = runs["on", jobs]
    assert run.code == runs["off", jobs].code == 0, run.stderr
    traces = _by_trace(run.spans)
    labels = []
    for spans in traces.values():
        (root,) = [s for s in spans if s["name"] == "invoke_agent proctor"]
        attributes = root["attributes"]
        labels.append((attributes["proctor.scenario.id"], attributes["proctor.eval.run_id"]))
        assert attributes["proctor.run.id"] == attributes["proctor.scenario.id"]
        assert root["parent_span_id"] == ""
        assert {s["resource"]["proctor.role"] for s in spans} == {"eval"}
    assert sorted(labels) == [(sid, run.run_id) for sid in SMALL_IDS]
    assert FAILED_EXPORT not in run.stderr


@pytest.mark.parametrize("jobs", [1, 2])
def test_each_scenarios_turns_and_governed_calls_are_children_of_its_run_span(
    runs: dict[tuple[str, int], Run], jobs: int
) -> None:
    run = runs["on", jobs]
    for spans in _by_trace(run.spans).values():
        (root,) = [s for s in spans if s["name"] == "invoke_agent proctor"]
        scenario = root["attributes"]["proctor.scenario.id"]
        trace = json.loads(run.traces[f"{scenario}.json"])
        turns = [s for s in spans if s["name"].startswith("chat ")]
        calls = [s for s in spans if s["name"].startswith("execute_tool ")]
        assert len(turns) + len(calls) + 1 == len(spans)
        assert {s["parent_span_id"] for s in turns + calls} == {root["span_id"]}
        assert len(turns) == trace["turns"] > 0
        assert sorted(
            (s["attributes"]["gen_ai.tool.call.id"], s["attributes"]["gen_ai.tool.name"])
            for s in calls
        ) == sorted((s["call_id"], s["tool"]) for s in trace["spans"] if s["kind"] == "tool_call")
        assert all(s["kind"] == "CLIENT" for s in turns)


@pytest.mark.parametrize("jobs", [1, 2])
def test_every_process_of_an_eval_run_flushes_its_decision_and_model_metrics(
    runs: dict[tuple[str, int], Run], jobs: int
) -> None:
    run = runs["on", jobs]
    decided = sum(point["value"] for point in run.metrics if point["name"] == "proctor.decisions")
    calls = sum(
        len([s for s in json.loads(trace)["spans"] if s["kind"] == "tool_call"])
        for trace in run.traces.values()
    )
    assert decided == calls  # the final collection of each process, at its shutdown
    names = {m["name"] for m in run.metrics}
    assert {"proctor.decision.duration", "gen_ai.client.token.usage"} <= names


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("mode", ["on", "hang"])
def test_replay_traces_are_byte_identical_with_export_on_failing_or_off(
    runs: dict[tuple[str, int], Run], jobs: int, mode: str
) -> None:
    off, other = runs["off", jobs], runs[mode, jobs]
    assert other.code == off.code
    assert sorted(other.traces) == sorted(f"{sid}.json" for sid in SMALL_IDS)
    assert other.traces == off.traces


@pytest.mark.parametrize("mode", ["hang", "refused"])
def test_an_endpoint_that_is_down_changes_nothing_but_at_most_a_warning_per_process(
    runs: dict[tuple[str, int], Run], mode: str
) -> None:
    down, off = runs[mode, 2], runs["off", 2]
    assert down.code == off.code
    assert down.traces == off.traces
    # However many batches failed: one line from each worker that had spans to export.
    warnings = [line for line in down.stderr.splitlines() if FAILED_EXPORT in line]
    assert 1 <= len(warnings) <= 2
    assert "Traceback" not in down.stderr
    # The progress lines and the report are the run's own, as without export.
    assert [line for line in down.stderr.splitlines() if line.startswith("[")] == [
        line for line in off.stderr.splitlines() if line.startswith("[")
    ]


def test_the_receiver_got_nothing_while_it_did_not_answer(
    runs: dict[tuple[str, int], Run],
) -> None:
    # The hanging receiver never answers, so it writes nothing: the byte-identical traces above
    # were made while every export waited on it.
    assert runs["hang", 1].spans == runs["hang", 2].spans == []


def test_two_suite_runs_of_the_same_scenarios_are_two_sets_of_traces(
    runs: dict[tuple[str, int], Run],
) -> None:
    # The loop's run id is the scenario id in every suite run (byte-identical traces), so the
    # suite run id must go into the trace id: else a backend merges every run of a scenario
    # into one trace, and `--repeat K` duplicates span ids.
    first, second = runs["on", 1], runs["on", 2]
    assert first.run_id != second.run_id
    ids = [{s["trace_id"] for s in run.spans} for run in (first, second)]
    assert len(ids[0]) == len(ids[1]) == len(SMALL_IDS)
    assert ids[0].isdisjoint(ids[1])
    pairs = [(s["trace_id"], s["span_id"]) for run in (first, second) for s in run.spans]
    assert len(pairs) == len(set(pairs))
