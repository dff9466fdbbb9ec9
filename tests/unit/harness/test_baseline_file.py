"""The baseline file format: canonical JSON, a committed schema, errors that name the file."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from governance import ManualClock
from harness._baseline import (
    SCHEMA_COMMAND,
    SCHEMA_PATH,
    Baseline,
    load_baseline,
    load_baseline_text,
    load_baseline_traces,
    render_baseline_schema,
    write_baseline,
    write_baseline_schema,
    write_baseline_traces,
)
from harness._baseline_record import build_baseline
from harness._errors import BaselineError, HarnessError
from harness._metrics import compute_metrics
from harness._results import CheckResult
from harness._trace import Trace
from tests.trace_factory import make_trace


def trace(sid: str, answer: str = "done") -> Trace:
    return make_trace(sid=sid, answer=answer)


def sample() -> Baseline:
    checks = [
        CheckResult("b-scn", "contract", "contract", True, ""),
        CheckResult("b-scn", "must_not_execute:fs.delete", "must_not_execute", True, ""),
        CheckResult("a-scn", "contract", "contract", True, ""),
        CheckResult("a-scn", "answer_contains:done", "answer_contains", True, ""),
        CheckResult("a-scn", "answer_contains:x", "answer_contains", False, ""),
    ]
    return build_baseline(
        checks,
        compute_metrics(checks),
        [trace("a-scn"), trace("b-scn")],
        reason="initial",
        clock=ManualClock(),
        previous=None,
        allow_regression=False,
    )


def test_a_written_baseline_loads_back_equal(tmp_path: Path) -> None:
    original = sample()
    path = write_baseline(original, tmp_path / "baseline.json")
    assert load_baseline(path) == original


def test_the_file_is_canonical_indented_sorted_with_a_trailing_newline(tmp_path: Path) -> None:
    path = write_baseline(sample(), tmp_path / "baseline.json")
    text = path.read_text(encoding="utf-8")
    assert text.endswith("}\n") and not text.endswith("\n\n")
    data = json.loads(text)
    assert text == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert data["metrics"]["answer_content"] == {"passed": 1, "total": 2, "rate": 0.5}
    assert data["metrics"]["guardrails"] == {"passed": 0, "total": 0, "rate": None}
    assert data["scenarios"]["a-scn"]["checks"] == [
        "answer_contains:done",
        "answer_contains:x",
        "contract",
    ]
    write_baseline(sample(), tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()


def test_rates_are_rounded_to_six_places() -> None:
    checks = [CheckResult("s", f"c{i}", "must_block", i == 0, "") for i in range(3)]
    checks.append(CheckResult("s", "contract", "contract", True, ""))
    built = build_baseline(
        checks,
        compute_metrics(checks),
        [trace("s")],
        reason="r",
        clock=ManualClock(),
        previous=None,
        allow_regression=False,
    )
    assert built.metrics["blocking"].rate == 0.333333


def test_the_committed_schema_matches_the_models() -> None:
    committed = SCHEMA_PATH.read_text(encoding="utf-8")
    assert committed == render_baseline_schema(), (
        f"baselines/baseline.schema.json is stale: regenerate it with `{SCHEMA_COMMAND}`"
    )


def test_write_baseline_schema_writes_the_rendered_schema(tmp_path: Path) -> None:
    written = write_baseline_schema(tmp_path / "nested" / "baseline.schema.json")
    assert written.read_text(encoding="utf-8") == render_baseline_schema()


def test_a_written_baseline_validates_against_the_committed_schema(tmp_path: Path) -> None:
    path = write_baseline(sample(), tmp_path / "baseline.json")
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.validate(json.loads(path.read_text(encoding="utf-8")), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**json.loads(path.read_text(encoding="utf-8")), "extra": 1}, schema)


def test_a_missing_baseline_file_is_named_with_the_fix(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(BaselineError) as info:
        load_baseline(missing)
    assert info.value.path == str(missing)
    assert "proctor baseline record" in str(info.value)


def test_invalid_json_names_the_file_and_line() -> None:
    with pytest.raises(BaselineError) as info:
        load_baseline_text('{\n  "version": 1,\n  oops\n}', "baselines/baseline.json")
    assert info.value.path == "baselines/baseline.json"
    assert info.value.line == 3
    assert str(info.value).startswith("baselines/baseline.json:3: not valid JSON")


def good_data() -> dict[str, Any]:
    return sample().model_dump(mode="json")


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda d: d.update(version=2), "version"),
        (lambda d: d.update(surprise=True), "surprise"),
        (lambda d: d["metrics"]["contract"].update(rate=0.5), "rate 0.5 does not match"),
        (lambda d: d["metrics"]["contract"].update(passed=9), "exceeds total"),
        (lambda d: d["metrics"]["guardrails"].update(rate=1.0), "rate 1.0 does not match"),
        (lambda d: d["scenarios"]["a-scn"].update(checks=["z", "a"]), "must be sorted"),
        (lambda d: d["scenarios"]["a-scn"].update(checks=["a", "a"]), "duplicate check ids"),
        (lambda d: d["scenarios"]["a-scn"].update(trace_digest="md5:1"), "trace_digest"),
        (lambda d: d["history"][0].update(recorded_at="2026-01-01 00:00"), "recorded_at"),
        (lambda d: d.pop("version"), "version"),
    ],
)
def test_a_malformed_baseline_is_refused_naming_what_is_wrong(
    edit: Callable[[dict[str, Any]], object], expected: str
) -> None:
    data = good_data()
    edit(data)
    with pytest.raises(BaselineError, match=expected) as info:
        load_baseline_text(json.dumps(data), "baselines/baseline.json")
    assert info.value.path == "baselines/baseline.json"


def test_duplicate_keys_are_refused_rather_than_silently_merged() -> None:
    with pytest.raises(BaselineError, match="duplicate key"):
        load_baseline_text('{"version": 1, "version": 1}', "b.json")


def test_a_non_object_baseline_is_refused() -> None:
    with pytest.raises(BaselineError, match="JSON object"):
        load_baseline_text("[]", "b.json")


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_baseline(sample(), tmp_path / "baseline.json")
    before = path.read_bytes()

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        write_baseline(sample().model_copy(update={"history": []}), path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["baseline.json"]


def test_baseline_traces_round_trip_and_stale_files_are_removed(tmp_path: Path) -> None:
    directory = tmp_path / "traces"
    write_baseline_traces([trace("a-scn"), trace("gone")], directory)
    (directory / "README.md").write_text("kept", encoding="utf-8")
    written = write_baseline_traces([trace("a-scn", answer="new"), trace("b-scn")], directory)
    assert [p.name for p in written] == ["a-scn.json", "b-scn.json"]
    assert not (directory / "gone.json").exists()
    assert (directory / "README.md").exists()
    loaded = load_baseline_traces(directory)
    assert loaded == {
        "a-scn": trace("a-scn", answer="new").stable_dict(),
        "b-scn": trace("b-scn").stable_dict(),
    }
    assert "run_id" not in loaded["a-scn"]
    text = (directory / "b-scn.json").read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_no_traces_directory_means_no_stored_traces(tmp_path: Path) -> None:
    assert load_baseline_traces(tmp_path / "absent") == {}


def test_a_stored_trace_under_the_wrong_name_is_refused(tmp_path: Path) -> None:
    write_baseline_traces([trace("a-scn")], tmp_path)
    (tmp_path / "a-scn.json").rename(tmp_path / "b-scn.json")
    with pytest.raises(BaselineError, match="not 'b-scn'") as info:
        load_baseline_traces(tmp_path)
    assert info.value.path == str(tmp_path / "b-scn.json")


def test_a_corrupt_stored_trace_names_its_file(tmp_path: Path) -> None:
    (tmp_path / "a-scn.json").write_text("{", encoding="utf-8")
    with pytest.raises(BaselineError) as info:
        load_baseline_traces(tmp_path)
    assert info.value.path == str(tmp_path / "a-scn.json")


def test_a_scenario_id_that_is_not_a_safe_file_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="safe file name"):
        write_baseline_traces([trace("../escape")], tmp_path / "traces")
    assert not (tmp_path / "escape.json").exists()
