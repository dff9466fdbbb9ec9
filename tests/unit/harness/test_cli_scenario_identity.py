"""Scenario identity through the CLI: a weakened input under the same check ids gates (exit 2)
until a baseline records it with an acknowledgement; behaviour drift is a different signal."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from harness._baseline import load_baseline
from harness.cli import _baseline_cmd
from harness.cli._app import cli
from tests.small_suite import edit_scenario


def proctor(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="proctor")


def _harmless_command(scenario: dict[str, Any]) -> None:
    scenario["script"][0]["calls"][0]["args"]["command"] = "echo hi"


def _new_request(scenario: dict[str, Any]) -> None:
    scenario["request"] = "Just say hello"


def _other_setup_file(scenario: dict[str, Any]) -> None:
    scenario["setup"]["files"]["notes/a.txt"] = "x"


def _edit_policy(root: Path) -> None:
    path = root / "scenarios" / "policies" / "budgets.yaml"
    text = path.read_text("utf-8")
    assert text.count("window_seconds: 86400") >= 1
    path.write_text(text.replace("window_seconds: 86400", "window_seconds: 3600", 1), "utf-8")


def _weaken(
    file: str, sid: str, change: Callable[[dict[str, Any]], None]
) -> Callable[[Path], None]:
    return lambda root: edit_scenario(root, file, sid, change)


WEAKENINGS = {
    "scripted-argument": (
        _weaken("blocks.yaml", "block-unknown-tool", _harmless_command),
        "block-unknown-tool",
        "script[0].calls[0].args.command: 'rm -rf /' -> 'echo hi'",
    ),
    "request": (
        _weaken("reads.yaml", "read-order-lookup", _new_request),
        "read-order-lookup",
        "request: 'What is the status of order ORD-0001?' -> 'Just say hello'",
    ),
    "setup-files": (
        _weaken("budgets.yaml", "budget-run-limit-stops-a-loop", _other_setup_file),
        "budget-run-limit-stops-a-loop",
        "setup.files['notes/a.txt']: 'a' -> 'x'",
    ),
    "policy": (_edit_policy, "budget-run-limit-stops-a-loop", "policy_digest: 'sha256:"),
}


@pytest.mark.parametrize(("weaken", "sid", "line"), WEAKENINGS.values(), ids=list(WEAKENINGS))
def test_a_weakened_input_under_the_same_check_ids_exits_2_naming_scenario_and_input(
    small: Path, weaken: Callable[[Path], None], sid: str, line: str
) -> None:
    weaken(small)
    result = proctor("run", "--report-dir", "rep")
    assert result.exit_code == 2, result.output
    assert "Failed checks" not in result.output  # every check id still there, still passing
    assert "0 regression(s) · 1 input change(s) · exit 2 (1 scenario(s) with changed inputs" in (
        result.output
    )
    assert f"≠ {sid}  inputs sha256:" in result.output
    assert line in result.output
    assert f"~ {sid}" not in result.output  # its trace change is explained, not drift


def test_moving_a_policy_or_spelling_out_defaults_is_not_an_input_change(small: Path) -> None:
    shutil.copy(small / "scenarios/policies/budgets.yaml", small / "scenarios/moved.yaml")

    def moved(scenario: dict[str, Any]) -> None:
        scenario["policy"] = "moved.yaml"
        scenario["max_steps"] = 8
        scenario["description"] = "reworded, never fed to the run"

    edit_scenario(small, "budgets.yaml", "budget-run-limit-stops-a-loop", moved)
    result = proctor(
        "run",
        "--scenarios",
        "scenarios/budgets.yaml",
        "--scenarios",
        "scenarios/blocks.yaml",
        "--scenarios",
        "scenarios/reads.yaml",
    )
    assert result.exit_code == 0, result.output
    assert "Changed inputs" not in result.output and "Drifted" not in result.output


def test_baseline_record_refuses_an_unacknowledged_input_change_before_running(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*_: Any, **__: Any) -> Any:
        raise AssertionError("the suite ran")

    before = (small / "baselines" / "baseline.json").read_bytes()
    _edit_policy(small)
    monkeypatch.setattr(_baseline_cmd, "run_checked_suite", never)
    refused = proctor("baseline", "record", "--reason", "looser window")
    assert refused.exit_code == 2, refused.output
    assert "budget-run-limit-stops-a-loop" in refused.output
    assert "policy_digest: 'sha256:" in refused.output
    assert "--accept-changed budget-run-limit-stops-a-loop" in refused.output
    stray = proctor("baseline", "record", "--reason", "x", "--accept-changed", "read-order-lookup")
    assert stray.exit_code == 64, stray.output
    assert "read-order-lookup: no such scenario has changed inputs" in stray.output
    assert (small / "baselines" / "baseline.json").read_bytes() == before


@pytest.mark.parametrize(
    "flag", [["--accept-changed", "read-order-lookup"], ["--accept-all-changed"]]
)
def test_baseline_record_accepts_an_acknowledged_change_and_keeps_it_in_the_history(
    small: Path, flag: list[str]
) -> None:
    edit_scenario(small, "reads.yaml", "read-order-lookup", lambda s: s.update(request="Hi"))
    recorded = proctor("baseline", "record", "--reason", "shorter request", *flag)
    assert recorded.exit_code == 0, recorded.output
    baseline = load_baseline(small / "baselines" / "baseline.json")
    last = baseline.history[-1]
    assert last.reason == "shorter request"
    [accepted] = last.accepted_changes
    assert accepted.scenario == "read-order-lookup"
    assert accepted.inputs_digest == baseline.scenarios["read-order-lookup"].inputs_digest
    assert accepted.previous_digest != accepted.inputs_digest
    assert proctor("run").exit_code == 0


def test_a_blank_reason_exits_64_before_the_suite_runs(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*_: Any, **__: Any) -> Any:
        raise AssertionError("the suite ran")

    monkeypatch.setattr(_baseline_cmd, "run_checked_suite", never)
    result = proctor("baseline", "record", "--reason", "  ")
    assert result.exit_code == 64, result.output
    assert "--reason" in result.output and "say why the baseline changes" in result.output


def test_gate_and_score_on_scenario_files_that_changed_since_the_run_exit_64(small: Path) -> None:
    assert proctor("run", "--report-dir", "rep").exit_code == 0
    edit_scenario(small, "reads.yaml", "read-order-lookup", _new_request)
    for command in (["gate", "rep"], ["score", "rep"]):
        result = proctor(*command)
        assert result.exit_code == 64, result.output
        assert "read-order-lookup (scenarios/reads.yaml:" in result.output
        assert "re-run the suite" in result.output
    (small / "scenarios" / "budgets.yaml").unlink()
    edit_scenario(
        small,
        "reads.yaml",
        "read-order-lookup",
        lambda s: s.update(request="What is the status of order ORD-0001?"),
    )
    gone = proctor("gate", "rep")
    assert gone.exit_code == 64, gone.output
    assert "trace of scenario 'budget-run-limit-stops-a-loop'" in gone.output
    assert "point --scenarios at the files the run used" in gone.output


# -- --baseline-ref -------------------------------------------------------------------------------


def _git(root: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid", *args],
        cwd=root, env=env, check=True, capture_output=True, timeout=30,
    )  # fmt: skip


@pytest.fixture
def committed(small: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    _git(small, "init", "--quiet", "--initial-branch=main")
    _git(small, "add", ".")
    _git(small, "commit", "--quiet", "-m", "base")
    return small


def test_with_baseline_ref_a_pr_that_only_edits_a_scenario_exits_2(committed: Path) -> None:
    edit_scenario(committed, "blocks.yaml", "block-unknown-tool", _harmless_command)
    # A hand-edited work-tree baseline claiming the new inputs does not acknowledge anything.
    result = proctor("run", "--baseline-ref", "HEAD")
    assert result.exit_code == 2, result.output
    assert "≠ block-unknown-tool" in result.output
    assert "not recorded: gated until" in result.output


def test_with_baseline_ref_a_pr_that_records_with_acknowledgement_passes(committed: Path) -> None:
    edit_scenario(committed, "blocks.yaml", "block-unknown-tool", _harmless_command)
    recorded = proctor(
        "baseline", "record", "--reason", "harmless command", "--accept-changed",
        "block-unknown-tool",
    )  # fmt: skip
    assert recorded.exit_code == 0, recorded.output
    passed = proctor("run", "--baseline-ref", "HEAD", "--report-dir", "rep")
    assert passed.exit_code == 0, passed.output
    assert "≠ block-unknown-tool" in passed.output
    assert "(acknowledged: harmless command)" in passed.output
    assert proctor("gate", "rep", "--baseline-ref", "HEAD").exit_code == 0

    # The acknowledgement is of those exact inputs: a further edit gates again.
    edit_scenario(committed, "blocks.yaml", "block-unknown-tool", _new_request)
    again = proctor("run", "--baseline-ref", "HEAD")
    assert again.exit_code == 2, again.output
    assert "request: 'Clean up the server' -> 'Just say hello'" in again.output


def test_with_baseline_ref_a_rewritten_history_acknowledges_nothing(committed: Path) -> None:
    edit_scenario(committed, "blocks.yaml", "block-unknown-tool", _harmless_command)
    assert (
        proctor(
            "baseline", "record", "--reason", "x", "--accept-changed", "block-unknown-tool"
        ).exit_code
        == 0
    )
    path = committed / "baselines" / "baseline.json"
    text = path.read_text("utf-8")
    path.write_text(text.replace('"the small suite"', '"rewritten"'), "utf-8")
    result = proctor("run", "--baseline-ref", "HEAD")
    assert result.exit_code == 2, result.output
    assert "does not extend the base branch's baseline" in result.output


@pytest.mark.parametrize(
    "args",
    [
        [
            "ask",
            "hello",
            "--script",
            "scenarios/scripts/refund-over-limit.yaml",
            "--run-id",
            "../x",
        ],
        ["approvals", "resume", "../x"],
    ],
    ids=["ask", "resume"],
)
def test_an_invalid_run_id_is_a_usage_error_64_not_an_internal_one(
    small: Path, args: list[str]
) -> None:
    result = proctor(*args, "--state-dir", str(small / "state"))
    assert result.exit_code == 64, result.output
    assert "invalid run id '../x'" in result.output and "use e.g. run-1" in result.output
