"""`proctor run` with a live provider against the bundled stub: repeats, pass^k, intervals,
the live gate (never the deterministic one), and short, honest output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.cli._app import cli
from stubs.openai_stub import running_stub

REPO = Path(__file__).resolve().parents[2]




def proctor(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="proctor")


def test_a_stub_run_without_a_live_baseline_says_so_in_one_line_and_exits_by_its_checks(
    repo_copy: Path,
) -> None:
    result = proctor("run", "--provider", "stub", "--report-dir", "out")
    assert result.exit_code == 0, result.output
    not_gated = [line for line in result.output.splitlines() if "NOT GATED" in line]
    assert len(not_gated) == 1
    assert "no live baseline for model proctor-stub-1" in not_gated[0]
    assert "deterministic replay baseline" in not_gated[0]
    assert "regress" not in result.output.lower()
    assert len(result.output.splitlines()) < 30
    assert "This IS a model-quality measurement" in result.output


def test_repeats_with_a_flaky_model_show_pass_hat_k_and_intervals_and_do_not_fail_the_gate(
    repo_copy: Path,
) -> None:
    recorded = proctor(
        "baseline", "record", "--live", "--provider", "stub", "--repeat", "5",
        "--reason", "the stub at 5/5",
    )  # fmt: skip
    assert recorded.exit_code == 0, recorded.output
    baseline = repo_copy / "baselines/live/proctor-stub-1.json"
    assert json.loads(baseline.read_text())["repeat"] == 5
    assert "baseline.json" not in recorded.output  # the deterministic baseline is untouched

    result = proctor(
        "run", "--provider", "stub", "--stub-fault", "flaky", "--repeat", "5",
        "--live-baseline", str(baseline), "--allow-other-model", "--report-dir", "out",
    )  # fmt: skip
    # A flaky run fails some checks, one flake per scenario is no regression: the gate passes.
    assert result.exit_code == 0, result.output
    assert "recorded for model proctor-stub-1, not proctor-stub-1:flaky" in result.output
    assert "pass^5 2/4 · pass@5 4/4" in result.output
    assert "live-order-status  passed 4/5 runs" in result.output
    assert "tool_execution       8/10            80.0%   [49.0%, 94.3%]" in result.output
    assert "no metric fell below the baseline's interval" in result.output

    report = json.loads((repo_copy / "out/report.json").read_text())
    live = report["live_run"]
    assert (live["model"], live["endpoint_host"], live["repeat"]) == (
        "proctor-stub-1:flaky", "127.0.0.1", 5,
    )  # fmt: skip
    assert "IS a model-quality measurement" in live["statement"]
    assert report["live"] is True and report["notice"] is None
    order = next(s for s in live["scenarios"] if s["id"] == "live-order-status")
    assert (order["passes"], order["pass_at_k"], order["pass_hat_k"]) == (4, True, False)
    for n in range(1, 6):  # every run's traces kept, in its own complete report
        assert (repo_copy / f"out/r{n}/traces/live-order-status.json").is_file()
        assert (repo_copy / f"out/r{n}/manifest.json").is_file()
    summary = (repo_copy / "out/summary.md").read_text()
    assert "pass^5" in summary and "Wilson 95%" in summary and "K=5" in summary
    junit = (repo_copy / "out/junit.xml").read_text()
    assert 'name="live-order-status"' in junit and "passed 4/5 runs" in junit
    assert 'name="model" value="proctor-stub-1:flaky"' in junit
    html = (repo_copy / "out/report.html").read_text()
    assert 'id="live-run"' in html and "[49.0%, 94.3%]" in html


def test_a_real_drop_across_scenarios_fails_the_live_gate(repo_copy: Path) -> None:
    assert proctor(
        "baseline", "record", "--live", "--provider", "stub", "--repeat", "3", "--reason", "ok",
    ).exit_code == 0  # fmt: skip
    result = proctor(
        "run", "--provider", "stub", "--stub-fault", "hallucinated-tool", "--repeat", "3",
        "--live-baseline", "baselines/live/proctor-stub-1.json", "--allow-other-model",
        "--report-dir", "out",
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "tool_execution: 0/6 [0.0%, 39.0%] lies below the baseline's 6/6" in result.output
    assert json.loads((repo_copy / "out/report.json").read_text())["exit_code"] == 2


def test_recording_a_lower_live_baseline_is_refused_unless_allowed(repo_copy: Path) -> None:
    args = ("baseline", "record", "--live", "--provider", "stub", "--repeat", "3")
    assert proctor(*args, "--reason", "good").exit_code == 0
    path = repo_copy / "baselines/live/proctor-stub-1.json"
    kept = path.read_text()
    worse = (
        "--live-baseline", str(path), "--stub-fault", "hallucinated-tool", "--reason", "bad",
        "--allow-other-model",
    )  # fmt: skip
    refused = proctor(*args, *worse)
    assert refused.exit_code == 2 and "refused: the new live baseline loses" in refused.output
    assert "tool_execution: 0/6 [0.0%, 39.0%] lies below" in refused.output
    assert path.read_text() == kept
    assert proctor(*args, *worse, "--allow-regression").exit_code == 0
    assert path.read_text() != kept


def test_repeats_of_a_replay_run_are_refused_as_a_usage_error(repo_copy: Path) -> None:
    result = proctor("run", "--repeat", "3")
    assert result.exit_code == 64
    assert "a replay run is deterministic" in result.output
    assert not (repo_copy / "reports").exists()  # nothing ran


def test_a_live_run_refuses_the_deterministic_baseline_options(repo_copy: Path) -> None:
    result = proctor("run", "--provider", "stub", "--baseline", "baselines/baseline.json")
    assert result.exit_code == 64
    assert "never the deterministic --baseline" in result.output


def test_an_unknown_stub_fault_is_a_usage_error_naming_the_known_ones(repo_copy: Path) -> None:
    result = proctor("run", "--provider", "stub", "--stub-fault", "moody")
    assert result.exit_code == 64 and "flaky" in result.output


def test_a_replay_run_leaves_live_only_scenarios_out_and_says_so(repo_copy: Path) -> None:
    result = proctor("run", "--report-dir", "out")
    assert result.exit_code == 0, result.output
    assert "4 live-only scenario(s) without a script left out" in result.output
    only_live = proctor("run", "--scenarios", "scenarios/live")
    assert only_live.exit_code == 64 and "is live-only" in only_live.output


def test_a_live_runs_reports_carry_the_host_and_never_the_key_or_the_url(
    repo_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-NEVER-IN-A-REPORT-42"
    with running_stub() as url:
        monkeypatch.setenv("PROCTOR_LLM_BASE_URL", url)
        monkeypatch.setenv("PROCTOR_LLM_API_KEY", secret)
        monkeypatch.setenv("PROCTOR_LLM_MODEL", "proctor-stub-1")
        result = proctor("run", "--provider", "openai", "--report-dir", "out")
    assert result.exit_code == 0, result.output
    port = url.rsplit(":", 1)[1].split("/")[0]
    files = [p for p in (repo_copy / "out").rglob("*") if p.is_file()]
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert secret not in text, path
        assert url not in text and f":{port}" not in text, path
    assert secret not in result.output and url not in result.output
    assert "model proctor-stub-1 @ 127.0.0.1" in result.output


def test_replay_only_expectations_are_skipped_by_a_live_run_and_counted(
    repo_copy: Path,
) -> None:
    (repo_copy / "scenarios/live/scripted.yaml").write_text(
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
    live = proctor("run", "--provider", "stub", "--repeat", "2", "--report-dir", "out")
    assert live.exit_code == 0, live.output
    assert "1 replay-only expectation(s) skipped in each run" in live.output
    replayed = proctor(
        "run", "--scenarios", "scenarios/live/scripted.yaml", "--no-baseline", "--report-dir", "r"
    )
    assert replayed.exit_code == 0, replayed.output  # replay checks it, and it holds
    checks = json.loads((repo_copy / "r/report.json").read_text())["checks"]["results"]
    assert any(c["id"] == "answer_contains:exactly-this-scripted-text" for c in checks)


def test_replay_only_must_name_an_expectation_the_scenario_gives(repo_copy: Path) -> None:
    (repo_copy / "scenarios/live/bad.yaml").write_text(
        """scenarios:
  - id: bad-replay-only
    description: names a field it does not expect
    request: Look up order ORD-0001.
    expect:
      must_execute: [orders.lookup]
      replay_only: [answer_contains]
""",
        encoding="utf-8",
    )
    result = proctor("check", "--scenarios", "scenarios/live/bad.yaml")
    assert result.exit_code == 3
    assert "replay_only names 'answer_contains'" in result.output
