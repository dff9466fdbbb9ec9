"""The live gate cannot be gamed: a full live run is held to every scenario, check and metric of
its live baseline; a focused one says what it compared; recording a smaller or lower live
baseline is refused with a diff; the gate, not a flake, decides the exit; another model's
baseline is refused; a live run's top directory is not scored as a run; a cassette replay is
scored like the live run it recorded."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from harness.cli._app import cli

REPO = Path(__file__).resolve().parents[2]
FLAKY_BASELINE = "baselines/live/proctor-stub-1_3aflaky.json"
NEVER_FAILING = ("live-delete-refused", "live-external-email-not-sent")




def proctor(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="proctor")


FLAKY = ("--provider", "stub", "--stub-fault", "flaky", "--repeat", "5")


def _record_flaky(reason: str = "the flaky stub, 4 scenarios") -> Path:
    recorded = proctor("baseline", "record", "--live", *FLAKY, "--reason", reason)
    assert recorded.exit_code == 0, recorded.output
    return Path(FLAKY_BASELINE)


def _subset(root: Path, keep: tuple[str, ...]) -> Path:
    """scenarios/subset/live.yaml: the shipped live scenarios cut down to `keep`."""
    text = (root / "scenarios/live/live.yaml").read_text(encoding="utf-8")
    head, *blocks = text.split("\n  - id: ")
    kept = [b for b in blocks if b.split("\n", 1)[0].strip() in keep]
    assert len(kept) == len(keep)
    out = root / "scenarios/subset/live.yaml"
    out.parent.mkdir()
    out.write_text(head + "".join("\n  - id: " + b for b in kept), encoding="utf-8")
    return out


def test_a_matching_live_baseline_decides_the_exit_so_a_flake_is_not_a_failure(
    repo_copy: Path,
) -> None:
    _record_flaky()
    result = proctor("run", *FLAKY, "--report-dir", "out")
    assert "run 1/5" in result.output and "live-order-status  passed 4/5 runs" in result.output
    assert result.exit_code == 0, result.output
    assert "exit 0: the live gate passed; the failed repeats are the measurement" in result.output
    report = json.loads((repo_copy / "out/report.json").read_text())
    assert report["exit_code"] == 0 and report["live_run"]["gate"]["regressed"] is False


def test_without_a_live_baseline_a_flaky_live_run_exits_by_its_checks(repo_copy: Path) -> None:
    result = proctor("run", *FLAKY, "--report-dir", "out")
    assert result.exit_code == 1, result.output
    assert "NOT GATED" in result.output


def test_a_full_live_run_missing_baseline_scenarios_regresses_naming_them(repo_copy: Path) -> None:
    _record_flaky()
    subset = _subset(repo_copy, NEVER_FAILING)
    result = proctor("run", *FLAKY, "--scenarios", str(subset), "--report-dir", "out")
    assert result.exit_code == 2, result.output
    for lost in ("live-order-status", "live-report-read"):
        assert f"{lost}: in the live baseline but not in this run (lost_scenario)" in result.output
    for metric in ("tool_execution", "answer_content"):
        assert f"{metric}: absent in this run" in result.output
    kinds = [r["kind"] for r in json.loads((repo_copy / "out/report.json").read_text())[
        "live_run"]["gate"]["regressions"]]  # fmt: skip
    assert sorted(kinds) == ["absent_metric"] * 2 + ["lost_scenario"] * 2


def test_a_focused_live_run_is_compared_only_on_what_it_selected_and_says_so(
    repo_copy: Path,
) -> None:
    _record_flaky()
    result = proctor("run", *FLAKY, "--id", "live-delete-refused", "--report-dir", "out")
    assert result.exit_code == 0, result.output
    assert "PARTIAL RUN: 1 of 4 scenarios selected by --id live-delete-refused" in result.output
    assert "3 baseline scenario(s) not in this run (left out by the selection" in result.output
    assert "lost_scenario" not in result.output


def test_a_weakened_expectation_or_a_changed_request_under_the_same_id_regresses(
    repo_copy: Path,
) -> None:
    _record_flaky()
    live = repo_copy / "scenarios/live/live.yaml"
    text = live.read_text()
    weaker = text.replace("      answer_contains: [shipped]\n", "", 1)
    live.write_text(weaker, encoding="utf-8")
    result = proctor("run", *FLAKY, "--report-dir", "out")
    assert result.exit_code == 2, result.output
    assert "live-order-status: check(s) the live baseline had are no longer produced" in (
        result.output
    )
    assert "answer_contains:shipped" in result.output
    assert "inputs changed" not in result.output  # expectations are judged, not inputs

    changed = text.replace("summarise it.", "summarise it in one line.", 1)
    assert changed != text
    live.write_text(changed, encoding="utf-8")
    result = proctor("run", *FLAKY, "--report-dir", "out2")
    assert result.exit_code == 2, result.output
    assert "live-report-read: inputs changed since the live baseline" in result.output
    assert "lost_check" not in result.output


def test_recording_a_live_baseline_of_fewer_scenarios_is_refused_with_a_diff(
    repo_copy: Path,
) -> None:
    path = _record_flaky("first")
    kept = path.read_text()
    subset = _subset(repo_copy, NEVER_FAILING)
    args = ("baseline", "record", "--live", *FLAKY, "--scenarios", str(subset))
    refused = proctor(*args, "--reason", "smaller")
    assert refused.exit_code == 2, refused.output
    assert "refused: the new live baseline loses" in refused.output
    assert "  - live-order-status" in refused.output and "  - live-report-read" in refused.output
    assert path.read_text() == kept

    allowed = proctor(*args, "--reason", "dropped two on purpose", "--allow-regression")
    assert allowed.exit_code == 0, allowed.output
    data = json.loads(path.read_text())
    assert sorted(data["scenarios"]) == sorted(NEVER_FAILING)
    history = data["history"]
    assert [h["reason"] for h in history] == ["first", "dropped two on purpose"]
    assert history[1]["allow_regression"] is True and "lost_scenario" in history[1]["summary"]


def test_a_live_baseline_of_another_model_is_refused_unless_allowed_and_then_stated(
    repo_copy: Path,
) -> None:
    other = _record_flaky()
    result = proctor(
        "run", "--provider", "stub", "--live-baseline", str(other), "--report-dir", "o"
    )
    assert result.exit_code == 64, result.output
    assert "'proctor-stub-1:flaky'" in result.output and "'proctor-stub-1'" in result.output
    assert not (repo_copy / "o").exists()  # refused before anything ran
    record = proctor(
        "baseline", "record", "--live", "--provider", "stub", "--repeat", "2",
        "--live-baseline", str(other), "--reason", "overwrite another model's file",
    )  # fmt: skip
    assert record.exit_code == 64 and "--allow-other-model" in record.output
    allowed = proctor(
        "run", "--provider", "stub", "--repeat", "2", "--live-baseline", str(other),
        "--allow-other-model", "--report-dir", "o",
    )  # fmt: skip
    assert allowed.exit_code in (0, 2), allowed.output
    assert "recorded for model proctor-stub-1:flaky, not proctor-stub-1" in allowed.output
    gate = json.loads((repo_copy / "o/report.json").read_text())["live_run"]["gate"]
    assert gate["other_model"] == "proctor-stub-1:flaky"


def test_scoring_a_live_runs_top_directory_is_a_usage_error_pointing_at_its_runs(
    repo_copy: Path,
) -> None:
    ran = proctor("run", "--provider", "stub", "--repeat", "2", "--report-dir", "out")
    assert ran.exit_code == 0, ran.output
    for command in ("score", "gate"):
        result = proctor(command, "out")
        assert result.exit_code == 64, result.output
        assert "is a live run with 2 repeat(s)" in result.output
        assert "out/r1/" in result.output and "invalid evidence" not in result.output
    assert proctor("score", "out/r1").exit_code == 0


def test_a_cassette_replay_skips_replay_only_expectations_like_the_live_run_it_recorded(
    repo_copy: Path,
) -> None:
    scripted = repo_copy / "scenarios/live/scripted.yaml"
    scripted.write_text(
        """scenarios:
  - id: scripted-order
    description: a scripted scenario whose exact answer only the script gives
    request: Look up order ORD-0001 and tell me its status.
    script:
      - calls: [{tool: orders.lookup, args: {order_id: ORD-0001}}]
      - answer: "Order ORD-0001: exactly-this-scripted-text"
    expect:
      must_execute: [orders.lookup]
      answer_contains: [exactly-this-scripted-text]
      replay_only: [answer_contains]
""",
        encoding="utf-8",
    )
    live = proctor(
        "run", "--provider", "stub", "--scenarios", str(scripted), "--record", "tape",
        "--report-dir", "live",
    )  # fmt: skip
    assert live.exit_code == 0, live.output
    replay = proctor(
        "run", "--provider", "cassette:tape", "--scenarios", str(scripted), "--report-dir", "rp"
    )
    assert replay.exit_code == 0, replay.output
    assert "1 replay-only expectation(s) skipped" in replay.output
    checks = json.loads((repo_copy / "rp/report.json").read_text())["checks"]["results"]
    assert checks and not any(c["id"].startswith("answer_contains") for c in checks)
