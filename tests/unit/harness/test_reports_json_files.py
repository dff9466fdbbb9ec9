"""write_reports: report.json's documented shape and the trace files `proctor score` re-reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness._errors import HarnessError
from harness._results import SuiteResult
from harness._trace import DETERMINISTIC_NOTICE, Trace
from harness.reports import REPORT_VERSION, write_reports
from tests.unit.harness.test_reports_sample import (
    clean_result,
    clean_trace,
    held_trace,
    sample_result,
)

TOP_LEVEL_KEYS = {
    "version", "run_id", "live", "deterministic", "notice", "providers", "exit_code",
    "exit_meaning", "baselined", "metrics", "checks", "failures", "regressions", "drift",
    "new_scenarios", "input_changes", "scenarios", "selection", "live_run",
}


def _report(tmp_path: Path, result: SuiteResult) -> dict[str, Any]:
    paths = write_reports(result, tmp_path / "out")
    data: dict[str, Any] = json.loads(paths["report.json"].read_text(encoding="utf-8"))
    return data


def test_write_reports_writes_every_artifact_and_returns_their_paths(tmp_path: Path) -> None:
    paths = write_reports(sample_result(), tmp_path / "out")
    assert set(paths) == {
        "report.json", "junit.xml", "summary.md", "report.html", "manifest.json", "traces",
    }  # fmt: skip
    for name, path in paths.items():
        assert path.exists() and path.parent.parent == tmp_path, name
    assert sorted(p.name for p in paths["traces"].iterdir()) == [
        "delete-notes.json", "read-notes.json", "refund-held.json",
    ]
    assert not [p for p in (tmp_path / "out").rglob(".*")]  # no temp files left behind


def test_report_json_has_the_documented_top_level_shape_with_sorted_keys(tmp_path: Path) -> None:
    data = _report(tmp_path, sample_result())
    assert set(data) == TOP_LEVEL_KEYS
    assert data["version"] == REPORT_VERSION
    text = (tmp_path / "out" / "report.json").read_text(encoding="utf-8")
    assert text == json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def test_report_json_carries_the_notice_and_exit_for_a_deterministic_run(tmp_path: Path) -> None:
    data = _report(tmp_path, sample_result())
    assert data["notice"] == DETERMINISTIC_NOTICE
    assert data["deterministic"] is True and data["live"] is False
    assert data["exit_code"] == 2
    live = _report(tmp_path / "live", clean_result(live=True))
    assert live["notice"] is None and live["live"] is True and live["exit_code"] == 0


def test_report_json_metrics_carry_baseline_and_delta_and_absent_is_null(tmp_path: Path) -> None:
    metrics = {m["name"]: m for m in _report(tmp_path, sample_result())["metrics"]}
    task = metrics["task_success_rate"]
    assert task["rate"] == pytest.approx(1 / 3) and task["delta"] == pytest.approx(-1 / 3)
    assert task["baseline"]["passed"] == 2
    assert metrics["guardrail_rate"]["rate"] is None and metrics["guardrail_rate"]["absent"]
    assert metrics["guardrail_rate"]["delta"] is None
    assert metrics["approval_hold_rate"]["baseline"] is None
    assert metrics["retired_rate"]["absent"] and metrics["retired_rate"]["total"] == 0


def test_report_json_lists_failures_regressions_drift_and_scenarios(tmp_path: Path) -> None:
    data = _report(tmp_path, sample_result())
    assert data["checks"]["failed"] == 2 and data["checks"]["passed"] == 3
    assert [f["id"] for f in data["failures"]] == ["answer_not_contains:deleted", "no_loop"]
    assert [r["kind"] for r in data["regressions"]] == ["rate_drop", "lost_check"]
    assert data["drift"][0]["new_digest"] == "sha256:new"
    assert data["new_scenarios"] == ["refund-held"]
    held = {s["id"]: s for s in data["scenarios"]}["refund-held"]
    assert held["status"] == "waiting_approval"
    assert held["termination"] == "held_for_approval"
    assert held["digest"] == held_trace().digest
    assert held["trace"] == "traces/refund-held.json"
    assert held["tool_calls"] == {"held": 1}


def test_without_a_gate_regressions_and_drift_are_empty_and_not_baselined(tmp_path: Path) -> None:
    data = _report(tmp_path, sample_result(gate=False))
    assert data["baselined"] is False and data["exit_code"] == 1
    assert data["regressions"] == [] and data["drift"] == [] and data["new_scenarios"] == []


def test_trace_files_are_canonical_bytes_and_rescore_to_the_same_digest(tmp_path: Path) -> None:
    result = sample_result()
    traces = write_reports(result, tmp_path)["traces"]
    for trace in result.traces:
        raw = (traces / f"{trace.scenario_id}.json").read_bytes()
        assert raw == trace.canonical()
        reread = Trace.model_validate_json(raw)
        assert reread == trace and reread.digest == trace.digest


def test_trace_files_of_an_earlier_run_are_removed(tmp_path: Path) -> None:
    write_reports(sample_result(), tmp_path)
    (tmp_path / "traces" / "notes.txt").write_text("mine", encoding="utf-8")
    write_reports(clean_result(), tmp_path)
    names = sorted(p.name for p in (tmp_path / "traces").iterdir())
    assert names == ["notes.txt", "read-notes.json"]


def test_a_scenario_id_cannot_write_a_trace_outside_the_traces_directory(tmp_path: Path) -> None:
    evil = clean_trace("../../escape")
    result = SuiteResult(run_id="r", traces=(evil,), checks=(), metrics=())
    data = _report(tmp_path, result)
    written = list((tmp_path / "out").rglob("*.json"))
    assert {p.parent.name for p in written} == {"out", "traces"}
    assert not list(tmp_path.glob("escape*")) and not list(tmp_path.parent.glob("escape*"))
    trace_path = data["scenarios"][0]["trace"]
    assert trace_path.startswith("traces/escape-") and "/.." not in trace_path
    assert (tmp_path / "out" / trace_path).read_bytes() == evil.canonical()


def test_ids_differing_only_by_case_get_distinct_files(tmp_path: Path) -> None:
    result = SuiteResult(
        run_id="r", traces=(clean_trace("Refund"), clean_trace("refund")), checks=(), metrics=()
    )
    data = _report(tmp_path, result)
    files = [s["trace"] for s in data["scenarios"]]
    assert len({f.casefold() for f in files}) == 2


def test_two_traces_with_one_scenario_id_are_refused(tmp_path: Path) -> None:
    result = SuiteResult(run_id="r", traces=(clean_trace(), clean_trace()), checks=(), metrics=())
    with pytest.raises(HarnessError, match="read-notes"):
        write_reports(result, tmp_path)
    assert not (tmp_path / "report.json").exists()
