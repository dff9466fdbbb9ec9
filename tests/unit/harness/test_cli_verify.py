"""`proctor score`/`gate` believe a stored run only once it verifies (CliRunner, real CLI).

Forged traces, traces copied from the baseline, a rewritten report or manifest, and signatures
made with another key (or none) all exit 3 naming the file and what does not match.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from governance import canonical_json
from harness.cli._app import cli
from tests.small_suite import edit_scenario
from tests.unit.harness.test_cli_eval import write_allow_delete_policy

KEY_ENV = "PROCTOR_REPORT_KEY"
Forge = Callable[[dict[str, Any]], None]


def proctor(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="proctor")


def _run(*extra: str) -> None:
    done = proctor("run", "--report-dir", "rep", *extra)
    assert done.exit_code in (0, 2), done.output


def _edit_trace(root: Path, sid: str, forge: Forge) -> None:
    path = root / "rep" / "traces" / f"{sid}.json"
    data = json.loads(path.read_text("utf-8"))
    forge(data)
    path.write_bytes(canonical_json(data))


def _tool_span(data: dict[str, Any], outcome: str) -> dict[str, Any]:
    span: dict[str, Any] = next(
        s for s in data["spans"] if s["kind"] == "tool_call" and s["outcome"] == outcome
    )
    return span


def _as_blocked(data: dict[str, Any]) -> None:
    _tool_span(data, "executed").update(
        outcome="blocked", effect="block", result_digest=None, result_chars=0
    )


def _delete_span(data: dict[str, Any]) -> None:
    del data["spans"][1]


def _output_on_blocked(data: dict[str, Any]) -> None:
    _tool_span(data, "blocked").update(result_digest="sha256:" + "1" * 64, result_chars=40)


def _refused(result: Result, *needles: str) -> None:
    assert result.exit_code == 3, result.output
    assert "the stored run does not verify" in result.output
    for needle in needles:
        assert needle in result.output, needle
    assert "exit 0" not in result.output  # nothing was scored


@pytest.mark.parametrize("command", ["score", "gate"])
@pytest.mark.parametrize(
    ("sid", "forge", "problem"),
    [
        (
            "read-order-lookup",
            _as_blocked,
            "traces/read-order-lookup.json: status: completed/answered recorded, but the spans "
            "end the run blocked/answered",
        ),
        (
            "block-delete-by-rule",
            lambda d: d.update(status="completed"),
            "traces/block-delete-by-rule.json: status: completed/answered recorded",
        ),
        (
            "block-delete-by-rule",
            _delete_span,
            "traces/block-delete-by-rule.json: spans[1]: id 's3' where s2 belongs",
        ),
        (
            "block-delete-by-rule",
            _output_on_blocked,
            "traces/block-delete-by-rule.json: spans[1]: a blocked call has output",
        ),
    ],
    ids=["executed-as-blocked", "status-completed", "span-deleted", "output-on-blocked"],
)
def test_a_forged_trace_exits_3_naming_the_file_and_the_problem(
    small: Path, command: str, sid: str, forge: Forge, problem: str
) -> None:
    _run()
    _edit_trace(small, sid, forge)
    result = proctor(command, "rep")
    _refused(result, problem, f"traces/{sid}.json: digest sha256:", "does not match the run's")


def test_a_consistently_rewritten_trace_still_fails_its_recorded_digest(small: Path) -> None:
    _run()

    def forge(data: dict[str, Any]) -> None:
        _as_blocked(data)
        data["status"] = "blocked"

    _edit_trace(small, "read-order-lookup", forge)
    report = json.loads((small / "rep" / "report.json").read_text("utf-8"))
    (entry,) = [s for s in report["scenarios"] if s["id"] == "read-order-lookup"]
    _refused(
        proctor("gate", "rep"),
        "traces/read-order-lookup.json: digest sha256:",
        f"does not match the run's {entry['digest']}",
    )


def _weaker_run(root: Path) -> None:
    policy = write_allow_delete_policy(root)
    edit_scenario(root, "blocks.yaml", "block-delete-by-rule", lambda s: s.update(policy=policy))
    weaker = proctor("run", "--report-dir", "rep")
    assert weaker.exit_code == 2, weaker.output


def test_the_baselines_traces_copied_into_a_weaker_run_exit_3(small: Path) -> None:
    _weaker_run(small)
    run_id = json.loads((small / "rep" / "report.json").read_text("utf-8"))["run_id"]
    for source in sorted((small / "baselines" / "traces").glob("*.json")):
        data = json.loads(source.read_text("utf-8"))
        (small / "rep" / "traces" / source.name).write_bytes(
            canonical_json({**data, "run_id": run_id})
        )
    result = proctor("gate", "rep")
    _refused(result, "traces/block-delete-by-rule.json: digest sha256:")
    assert "report.json: scenario block-delete-by-rule: tool_calls {'executed': 1}" in (
        result.output
    )


def test_the_baselines_trace_files_copied_verbatim_exit_3_naming_the_file(small: Path) -> None:
    _weaker_run(small)
    shutil.copy(
        small / "baselines" / "traces" / "block-delete-by-rule.json",
        small / "rep" / "traces" / "block-delete-by-rule.json",
    )
    result = proctor("gate", "rep")
    assert result.exit_code == 3, result.output
    assert "traces/block-delete-by-rule.json:1: run_id: Field required" in result.output


def test_an_edited_report_exits_3_on_its_digest(small: Path) -> None:
    _run()
    path = small / "rep" / "report.json"
    path.write_text(path.read_text("utf-8").replace('"exit_code": 0', '"exit_code": 1'), "utf-8")
    _refused(proctor("gate", "rep"), "report.json: digest sha256:", "does not match the run's")


def test_a_trace_of_another_run_exits_3_on_its_run_id(small: Path) -> None:
    _run()
    _edit_trace(small, "read-order-lookup", lambda d: d.update(run_id="run-other"))
    _refused(
        proctor("score", "rep"),
        "traces/read-order-lookup.json: run id 'run-other' does not match the run's 'run-",
    )


def test_a_run_without_its_manifest_exits_3(small: Path) -> None:
    _run()
    (small / "rep" / "manifest.json").unlink()
    _refused(proctor("gate", "rep"), "manifest.json: missing, so nothing pins the traces")


# -- signed runs --------------------------------------------------------------------------------


def test_a_signed_run_verifies_with_its_key(small: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "ci-secret")
    _run()
    manifest = json.loads((small / "rep" / "manifest.json").read_text("utf-8"))
    assert manifest["signature"].startswith("hmac-sha256:")
    result = proctor("gate", "rep")
    assert result.exit_code == 0, result.output
    assert f"authenticated: the run's manifest signature verifies with {KEY_ENV}" in result.output


def test_a_signed_run_fails_with_a_wrong_key(small: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "ci-secret")
    _run()
    monkeypatch.setenv(KEY_ENV, "another-secret")
    _refused(proctor("gate", "rep"), "manifest.json: the signature does not verify")


def test_a_signed_run_whose_signature_is_stripped_is_refused(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "ci-secret")
    _run()
    path = small / "rep" / "manifest.json"
    manifest = json.loads(path.read_text("utf-8"))
    path.write_text(json.dumps({**manifest, "signature": None}), "utf-8")
    _refused(proctor("score", "rep"), f"manifest.json: the run is unsigned, but {KEY_ENV} is set")


def test_a_signed_run_whose_manifest_is_rewritten_to_match_a_forgery_is_refused(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "ci-secret")
    _run()
    _edit_trace(small, "block-delete-by-rule", lambda d: d.update(status="completed"))
    path = small / "rep" / "manifest.json"
    manifest = json.loads(path.read_text("utf-8"))
    manifest["traces"]["block-delete-by-rule"]["digest"] = "sha256:" + "3" * 64
    path.write_text(json.dumps(manifest), "utf-8")
    _refused(proctor("gate", "rep"), "manifest.json: the signature does not verify")


def test_an_unsigned_run_is_refused_when_a_key_is_configured(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run()
    monkeypatch.setenv(KEY_ENV, "ci-secret")
    _refused(proctor("gate", "rep"), f"the run is unsigned, but {KEY_ENV} is set")


def test_without_a_key_the_run_is_scored_and_said_to_be_unauthenticated(small: Path) -> None:
    _run()
    manifest = json.loads((small / "rep" / "manifest.json").read_text("utf-8"))
    assert manifest["signature"] is None
    result = CliRunner().invoke(cli, ["gate", "rep"], prog_name="proctor")
    assert result.exit_code == 0, result.output
    line = f"unauthenticated: {KEY_ENV} is not set, so the run's signature was not checked"
    assert result.stderr.count(line) == 1
    assert result.stdout.count(line) == 1


def _scored_lines(output: str) -> list[str]:
    """The scored suite as printed: everything but where files went and how the run verified."""
    skipped = ("reports: ", "manifest: ", "unauthenticated: ")
    return [line for line in output.splitlines() if not line.startswith(skipped)]


def test_a_clean_stored_run_rescores_to_the_live_runs_result(small: Path) -> None:
    _weaker_run(small)  # a regression and a failed check: more to compare than a clean run
    live = proctor("run", "--report-dir", "rep2")
    stored = proctor("gate", "rep2")
    assert live.exit_code == stored.exit_code == 2, stored.output
    assert "rate_drop  unsafe_execution" in stored.stdout
    assert _scored_lines(stored.stdout) == _scored_lines(live.stdout)


# -- the baseline's stored traces ---------------------------------------------------------------


def test_an_edited_baseline_trace_exits_3_naming_it_for_run_and_gate(small: Path) -> None:
    _run()
    path = small / "baselines" / "traces" / "block-delete-by-rule.json"
    data = json.loads(path.read_text("utf-8"))
    data["status"] = "completed"
    path.write_text(json.dumps(data, indent=2), "utf-8")
    for args in (
        ("gate", "rep"),
        ("run",),
        ("score", "rep", "--baseline", "baselines/baseline.json"),
    ):
        result = proctor(*args)
        assert result.exit_code == 3, (args, result.output)
        assert "the baseline's stored traces do not verify" in result.output
        shown = "baselines/traces/block-delete-by-rule.json"
        assert f"{shown}: digest sha256:" in result.output
        assert f"{shown}: status: completed/answered recorded" in result.output


def test_a_tampered_baseline_trace_on_the_base_ref_exits_3_naming_it(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    for name in list(os.environ):
        if name.startswith("GIT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    path = small / "baselines" / "traces" / "read-order-lookup.json"
    data = json.loads(path.read_text("utf-8"))
    _as_blocked(data)
    path.write_text(json.dumps(data, indent=2), "utf-8")
    git = ["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid"]
    for args in (["init", "-q", "-b", "main"], ["add", "baselines"], ["commit", "-qm", "b"]):
        subprocess.run([*git, *args], cwd=small, check=True, capture_output=True, timeout=30)
    _run("--no-baseline")
    result = proctor("gate", "rep", "--baseline-ref", "HEAD")
    assert result.exit_code == 3, result.output
    assert "HEAD:./traces/read-order-lookup.json: digest sha256:" in result.output
