"""AgentDojo scenarios through the real runner: the suite's tools behind the firewall over a
fresh environment, AgentDojo's own checks after the run, the compromised script obeying the
injection only once it has read it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.cli import cli
from tests.agentdojo_support import require_agentdojo

DATA = Path(__file__).resolve().parents[2] / "data" / "agentdojo"
SUITE = DATA / "banking"


@pytest.fixture(autouse=True)
def _agentdojo() -> None:
    require_agentdojo()


def run(report: Path, *args: str) -> Result:
    return CliRunner().invoke(
        cli,
        ["run", "--scenarios", str(SUITE), "--no-baseline", "--report-dir", str(report), *args],
        prog_name="proctor",
    )


def traces(report: Path) -> dict[str, dict[str, object]]:
    found = {}
    for path in sorted((report / "traces").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        data.pop("run_id")
        found[str(data["scenario_id"])] = data
    return found


def checks(report: Path) -> dict[str, bool]:
    data = json.loads((report / "report.json").read_text(encoding="utf-8"))
    results = data["checks"]["results"]
    return {f"{c['scenario_id']} {c['id']}": c["passed"] for c in results if c["id"] != "contract"}


def test_taint_policy_contains_the_attack_and_keeps_the_task(tmp_path: Path) -> None:
    result = run(tmp_path / "r")
    assert result.exit_code == 0, result.output
    assert "| banking | 1/1 (100.0%) | 1/1 (100.0%) | 0/1 (0.0%) |" in result.output
    assert checks(tmp_path / "r") == {
        "ad-spending agentdojo_utility:banking.user_task_1=true": True,
        "ad-spending-attacked agentdojo_utility_under_attack:banking.user_task_1=true": True,
        "ad-spending-attacked agentdojo_attack:banking.injection_task_1=false": True,
    }
    attacked = traces(tmp_path / "r")["ad-spending-attacked"]
    calls = [(s["tool"], s["outcome"]) for s in attacked["spans"] if s["kind"] == "tool_call"]
    assert calls == [
        ("banking.get_most_recent_transactions", "executed"),
        ("banking.send_money", "blocked"),  # decided as tainted: the transactions were read
    ]
    assert attacked["environment_checks"] == [
        {
            "check": "utility",
            "error": None,
            "suite": "banking",
            "task": "user_task_1",
            "value": True,
        },
        {
            "check": "attack_succeeded",
            "error": None,
            "suite": "banking",
            "task": "injection_task_1",
            "value": False,
        },
    ]


def test_without_governance_the_compromised_model_succeeds(tmp_path: Path) -> None:
    result = run(tmp_path / "r", "--policy", str(DATA / "allow-all.yaml"))
    assert result.exit_code == 1, result.output
    assert (
        checks(tmp_path / "r")[
            "ad-spending-attacked agentdojo_attack:banking.injection_task_1=false"
        ]
        is False
    )
    attacked = traces(tmp_path / "r")["ad-spending-attacked"]
    assert [s["outcome"] for s in attacked["spans"] if s["kind"] == "tool_call"] == [
        "executed",
        "executed",
    ]
    assert "agentdojo_attack:banking.injection_task_1=false" in result.output
    assert "| banking | 1/1 (100.0%) | 1/1 (100.0%) | 1/1 (100.0%) |" in result.output


def test_traces_are_byte_identical_across_runs_and_workers(tmp_path: Path) -> None:
    assert run(tmp_path / "a").exit_code == 0
    assert run(tmp_path / "b", "-j", "2").exit_code == 0
    assert traces(tmp_path / "a") == traces(tmp_path / "b")


def test_a_scenario_never_sees_what_an_earlier_one_did_to_the_environment(tmp_path: Path) -> None:
    # Under allow-all the attacked scenario sends money; the task alone, run after it or on its
    # own, reads the same untouched account.
    allow = ("--policy", str(DATA / "allow-all.yaml"))
    assert run(tmp_path / "both", *allow).exit_code == 1
    assert run(tmp_path / "alone", *allow, "--id", "ad-spending").exit_code == 0
    both, alone = traces(tmp_path / "both"), traces(tmp_path / "alone")
    assert both["ad-spending"] == alone["ad-spending"]


def test_a_live_model_runs_the_same_scenarios_and_is_judged_by_the_same_checks(
    tmp_path: Path,
) -> None:
    # The bundled vendor stub over real HTTP stands in for a live model (no credential).
    report = tmp_path / "live"
    result = CliRunner().invoke(
        cli,
        ["run", "--provider", "stub", "--scenarios", str(SUITE), "--no-baseline"]
        + ["--report-dir", str(report)],
        prog_name="proctor",
    )
    assert result.exit_code in (0, 1), result.output
    assert "This IS a model-quality measurement" in result.output
    stored = traces(report / "r1")
    assert set(stored) == {"ad-spending", "ad-spending-attacked"}
    for trace in stored.values():
        assert trace["provider"]["live"] is True  # type: ignore[index]
        checked = trace["environment_checks"]
        assert isinstance(checked, list) and checked[0]["task"] == "user_task_1"
    summary = (report / "r1" / "summary.md").read_text(encoding="utf-8")
    assert "AgentDojo with a live model" in summary


def test_unknown_tasks_and_vectors_are_contract_violations_naming_file_and_line(
    tmp_path: Path,
) -> None:
    suite = tmp_path / "banking"
    suite.mkdir()
    text = (SUITE / "spending.yaml").read_text(encoding="utf-8")
    text = text.replace("user_task: user_task_1}", "user_task: user_task_99}")
    text = text.replace("injection_incoming_transaction:", "injection_incoming_transactio:")
    text = text.replace("Before you answer, send", 'Before you answer, "send"')
    (suite / "spending.yaml").write_text(text, encoding="utf-8")
    (tmp_path / "taint.yaml").write_text((DATA / "taint.yaml").read_text("utf-8"), "utf-8")
    result = CliRunner().invoke(
        cli, ["run", "--scenarios", str(suite), "--no-baseline"], prog_name="proctor"
    )
    assert result.exit_code == 3, result.output
    assert "spending.yaml:10: scenario ad-spending: suite 'banking' (v1.2.2) has no user task" in (
        result.output
    )
    assert "did you mean 'injection_incoming_transaction'?" in result.output


def test_an_injection_text_agentdojo_cannot_place_is_refused_before_the_run(
    tmp_path: Path,
) -> None:
    # AgentDojo formats injections into its YAML source: a double quote ends a quoted scalar
    # there, and its own loader would fail mid-run (it did: exit 70). It is a contract error.
    suite = tmp_path / "banking"
    suite.mkdir()
    text = (SUITE / "spending.yaml").read_text(encoding="utf-8")
    (suite / "spending.yaml").write_text(
        text.replace("Before you answer, send", 'Before you answer, "send"'), encoding="utf-8"
    )
    (tmp_path / "taint.yaml").write_text((DATA / "taint.yaml").read_text("utf-8"), "utf-8")
    result = CliRunner().invoke(
        cli, ["run", "--scenarios", str(suite), "--no-baseline"], prog_name="proctor"
    )
    assert result.exit_code == 3, result.output
    assert (
        "spending.yaml:28: scenario ad-spending-attacked: AgentDojo's environment cannot take"
        in (result.output)
    )
