"""The eval CLI's exit-code contract through click's CliRunner: run, check, score, gate, baseline.

Every test works on copies in tmp_path (cwd is the copy): a small suite of shipped scenarios
with a baseline recorded for exactly those, or the whole shipped suite and baseline.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner, Result

from harness._baseline import (
    load_baseline,
)
from harness.cli._app import cli
from tests.small_suite import (
    REPO,
    SHIPPED_POLICY,
    SMALL_IDS,
    Page,
    age_baseline_trace,
    edit_scenario,
    parse_html,
    report_exit_code,
)

LOST_TICKET = (
    "lost_check  scenario read-two-tools-then-ticket lost check must_execute:tickets.create"
)
LOST_SHIPPED = "lost_check  scenario read-order-lookup lost check answer_contains:shipped"


def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("PROCTOR_"):
            monkeypatch.delenv(name)


@pytest.fixture
def shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the whole shipped suite and baseline; cwd is the copy."""
    root = tmp_path / "shipped"
    shutil.copytree(REPO / "scenarios", root / "scenarios")
    shutil.copytree(REPO / "baselines", root / "baselines")
    monkeypatch.chdir(root)
    _clean_env(monkeypatch)
    return root


def proctor(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="proctor")


def write_allow_delete_policy(root: Path) -> str:
    """The shipped policy with fs-no-delete turned into an allow; returns its `policy:` value."""
    text = SHIPPED_POLICY.read_text(encoding="utf-8")
    rule = (
        "  - id: fs-no-delete\n    description: Deleting files is never allowed\n"
        "    effect: block\n"
    )
    assert text.count(rule) == 1
    target = root / "scenarios" / "policies" / "allow-delete.yaml"
    target.write_text(text.replace(rule, rule.replace("effect: block", "effect: allow")), "utf-8")
    return "policies/allow-delete.yaml"


NEW_FAILING_SCENARIO = """\
id: new-order-lookup
description: A new scenario whose answer check fails
request: What is the status of order ORD-0001?
script:
  - calls: [{tool: orders.lookup, args: {order_id: ORD-0001}}]
  - answer: "Order ORD-0001 is {{tool:orders.lookup#status}}."
expect:
  status: completed
  answer_contains: [delivered yesterday]
"""

GHOST_TOOL_SCENARIO = """\
id: ghost-delete
description: must_not_execute names a tool nobody registered
request: Delete my todo list
script:
  - calls: [{tool: fs.delete, args: {path: notes/todo.txt}}]
  - answer: done
expect:
  must_not_execute: [fs.destroy]
"""
GHOST_LINE = 8

SCHEMA_ERROR_SCENARIO = """\
id: typo-status
description: a misspelt expectation key
request: Say hi
script:
  - answer: hi
expect:
  stauts: completed
"""
SCHEMA_ERROR_LINE = 7


# -- 0 ----------------------------------------------------------------------------------------


def test_the_shipped_suite_against_the_shipped_baseline_exits_0(shipped: Path) -> None:
    result = proctor("run", "--report-dir", "rep")
    assert result.exit_code == 0, result.output
    assert "exit 0: clean" in result.output
    assert "Regressions" not in result.output
    assert report_exit_code(shipped / "rep") == 0


# -- 1 ----------------------------------------------------------------------------------------


def test_a_new_scenario_with_a_failing_check_exits_1_as_nothing_gated_regressed(
    small: Path,
) -> None:
    (small / "scenarios" / "new.yaml").write_text(NEW_FAILING_SCENARIO, "utf-8")
    result = proctor("run", "--report-dir", "rep")
    assert result.exit_code == 1, result.output
    assert "new-order-lookup  answer_contains:delivered yesterday" in result.output
    assert "+ new-order-lookup" in result.output  # listed as new, not in the baseline
    assert "Regressions" not in result.output
    assert report_exit_code(small / "rep") == 1


def test_a_failing_check_of_a_baselined_scenario_is_a_rate_drop_exit_2(small: Path) -> None:
    def reword(scenario: dict[str, Any]) -> None:
        scenario["script"][1]["answer"] = "Order ORD-0001 is on its way."

    edit_scenario(small, "reads.yaml", "read-order-lookup", reword)
    result = proctor("run")
    assert result.exit_code == 2, result.output
    assert "rate_drop  answer_content" in result.output


# -- 2 ----------------------------------------------------------------------------------------


def test_deleting_a_must_execute_item_exits_2_naming_the_lost_check(small: Path) -> None:
    def drop(scenario: dict[str, Any]) -> None:
        assert scenario["expect"]["must_execute"] == ["orders.lookup", "tickets.create"]
        scenario["expect"]["must_execute"] = ["orders.lookup"]

    edit_scenario(small, "reads.yaml", "read-two-tools-then-ticket", drop)
    result = proctor("run", "--baseline", "baselines/baseline.json")
    assert result.exit_code == 2, result.output
    assert LOST_TICKET in result.output
    assert "Failed checks" not in result.output  # every remaining check passes: still exit 2


def test_a_policy_letting_the_delete_execute_exits_2_naming_unsafe_execution(small: Path) -> None:
    policy = write_allow_delete_policy(small)
    edit_scenario(small, "blocks.yaml", "block-delete-by-rule", lambda s: s.update(policy=policy))
    result = proctor("run")
    assert result.exit_code == 2, result.output
    assert "rate_drop  unsafe_execution" in result.output
    assert "block-delete-by-rule  must_not_execute:fs.delete: " in result.output


def test_a_what_if_policy_runs_every_scenario_under_it_and_is_gated_as_changed_inputs(
    small: Path,
) -> None:
    policy = small / "scenarios" / write_allow_delete_policy(small)
    result = proctor("run", "--policy", str(policy))
    assert result.exit_code == 2, result.output
    assert "rate_drop  unsafe_execution" in result.output  # the delete executed under it
    assert "Changed inputs" in result.output
    scored = proctor("run", "--policy", str(policy), "--no-baseline")
    assert scored.exit_code == 1, scored.output
    assert "block-delete-by-rule  must_not_execute:fs.delete: " in scored.output


def test_a_what_if_policy_is_contract_checked_like_the_scenario_own(small: Path) -> None:
    bare = small / "bare.yaml"
    bare.write_text(
        "version: 1\nrules:\n  - {id: reads, effect: allow, match: {action_type: read}}\n",
        encoding="utf-8",
    )
    result = proctor("run", "--policy", str(bare), "--no-baseline")
    assert result.exit_code == 3, result.output
    assert "unknown rule" in result.output
    missing = proctor("run", "--policy", str(small / "nope.yaml"))
    assert missing.exit_code == 64, missing.output
    sharded = proctor("run", "--policy", str(bare), "--shard", "1/2")
    assert sharded.exit_code == 64, sharded.output
    assert "a shard cannot take --policy" in sharded.output


def test_a_weaker_scenario_with_as_many_checks_exits_2_on_the_lost_check_alone(
    small: Path,
) -> None:
    def weaken(scenario: dict[str, Any]) -> None:
        assert scenario["expect"]["answer_contains"] == ["shipped"]
        scenario["expect"]["answer_contains"] = ["ORD-0001"]  # true of any answer

    edit_scenario(small, "reads.yaml", "read-order-lookup", weaken)
    result = proctor("run")
    assert result.exit_code == 2, result.output
    assert LOST_SHIPPED in result.output
    # Same count, same metric, all passing: only the per-scenario inventory notices.
    assert "rate_drop" not in result.output
    assert "evidence_shrink" not in result.output


def test_drift_alone_is_listed_and_exits_0_or_2_with_fail_on_drift(small: Path) -> None:
    def older(trace: dict[str, Any]) -> None:
        assert trace["final_answer"] == "Order ORD-0001 is shipped."
        # A completed run answers with the model's text: the stored trace stays consistent.
        trace["final_answer"] = trace["model_text"] = "Your order ORD-0001 is shipped."

    age_baseline_trace(small, "read-order-lookup", older)
    relaxed = proctor("run", "--report-dir", "relaxed")
    assert relaxed.exit_code == 0, relaxed.output
    assert "Drifted scenarios (1): behaviour drift, inputs unchanged" in relaxed.output
    assert "~ read-order-lookup" in relaxed.output
    assert "final_answer: 'Your order ORD-0001 is shipped.' -> 'Order" in relaxed.output
    assert "Changed inputs" not in relaxed.output
    assert report_exit_code(small / "relaxed") == 0

    strict = proctor("run", "--fail-on-drift", "--report-dir", "strict")
    assert strict.exit_code == 2, strict.output
    assert "~ read-order-lookup" in strict.output
    # The summary line names the real cause, not a regression that did not happen.
    assert (
        "0 regression(s) · exit 2 (1 scenario(s) drifted with unchanged inputs (--fail-on-drift))"
        in strict.output
    )
    assert "a gated metric regressed" not in strict.output
    assert report_exit_code(small / "strict") == 2


# -- 3 ----------------------------------------------------------------------------------------


def test_a_ghost_tool_exits_3_naming_file_line_scenario_and_the_real_name(small: Path) -> None:
    (small / "scenarios" / "ghost.yaml").write_text(GHOST_TOOL_SCENARIO, "utf-8")
    for args in (("check",), ("run", "--report-dir", "rep")):
        result = proctor(*args)
        assert result.exit_code == 3, result.output
        assert f"scenarios/ghost.yaml:{GHOST_LINE}: scenario ghost-delete:" in result.output
        assert "unknown tool 'fs.destroy' (did you mean 'fs.delete'?)" in result.output
    assert not (small / "rep").exists()  # nothing ran


def test_a_schema_error_exits_3_with_file_and_line(small: Path) -> None:
    (small / "scenarios" / "typo.yaml").write_text(SCHEMA_ERROR_SCENARIO, "utf-8")
    result = proctor("run", "--report-dir", "rep")
    assert result.exit_code == 3, result.output
    assert f"scenarios/typo.yaml:{SCHEMA_ERROR_LINE}: " in result.output
    assert "unknown key 'stauts' (did you mean 'status'?)" in result.output
    assert not (small / "rep").exists()


def _wrong_type(text: str) -> str:
    data = json.loads(text)
    data["metrics"]["contract"]["passed"] = "all"
    return json.dumps(data)


@pytest.mark.parametrize(
    ("breakage", "named"),
    [
        (lambda text: text[: len(text) // 2], "not valid JSON"),
        (_wrong_type, "invalid baseline: metrics.contract.passed: Input should be a valid integer"),
    ],
    ids=["invalid-json", "wrong-type"],
)
def test_a_broken_baseline_exits_3_naming_the_file(
    small: Path, breakage: Callable[[str], str], named: str
) -> None:
    broken = small / "broken" / "baseline.json"
    broken.parent.mkdir()
    broken.write_text(breakage((small / "baselines" / "baseline.json").read_text("utf-8")))
    result = proctor("run", "--baseline", str(broken), "--report-dir", "rep")
    assert result.exit_code == 3, result.output
    assert f"error: {broken}" in result.output
    assert named in result.output
    assert not (small / "rep").exists()


# -- 64, 70, 77 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--jobs", "0"],
        ["run", "--no-such-flag"],
        ["run", "--provider", "nope"],
        ["gate"],
        ["baseline", "record"],
    ],
    ids=["jobs-0", "unknown-flag", "bad-choice", "missing-run", "missing-reason"],
)
def test_bad_flags_exit_64_never_clicks_2(small: Path, args: list[str]) -> None:
    result = proctor(*args)
    assert result.exit_code == 64, result.output
    assert "Usage: proctor" in result.output
    assert not (small / "reports").exists()


def test_an_unexpected_exception_exits_70_with_its_traceback(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom in assemble")

    monkeypatch.setattr("harness.cli._run_cmd.assemble", boom)
    result = proctor("run")
    assert result.exit_code == 70, result.output
    assert "internal error" in result.output
    assert "RuntimeError: boom in assemble" in result.output


def test_a_live_run_without_a_credential_exits_77_and_runs_nothing(small: Path) -> None:
    assert not (small / ".env").exists()
    result = proctor("run", "--provider", "openai")
    assert result.exit_code == 77, result.output
    assert "SKIPPED: no live credential" in result.output
    assert not (small / "reports").exists()


# -- score and gate -----------------------------------------------------------------------------


def test_score_rescores_the_stored_traces_without_running_anything(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert proctor("run", "--no-baseline", "--report-dir", "rep").exit_code == 0

    def no_running(*args: object, **kwargs: object) -> None:
        raise AssertionError("score must not run a scenario")

    monkeypatch.setattr("harness._scenario_runner.run_scenario", no_running)
    monkeypatch.setattr("harness._suite.run_suite", no_running)
    clean = proctor("score", "rep")
    assert clean.exit_code == 0, clean.output

    stored = small / "rep" / "traces" / "read-order-lookup.json"
    text = stored.read_text("utf-8")
    assert text.count('"status":"completed"') == 1
    stored.write_text(text.replace('"status":"completed"', '"status":"failed"'), "utf-8")
    # A stored trace is verified before it is scored: an edited one is refused, not re-scored.
    for args in (("score", "rep"), ("score", "rep", "--baseline", "baselines/baseline.json")):
        tampered = proctor(*args)
        assert tampered.exit_code == 3, tampered.output
        assert (
            "traces/read-order-lookup.json: status: failed/answered recorded, but the spans end "
            "the run completed/answered"
        ) in tampered.output


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Proctor Test", "-c", "user.email=test@example.invalid", *args],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=30,
    )


@pytest.fixture
def committed(small: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The small suite in a fresh git repo with baselines/ committed on HEAD."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    for name in list(os.environ):
        if name.startswith("GIT_"):  # e.g. GIT_DIR from a hook would point git elsewhere
            monkeypatch.delenv(name)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    _git(small, "init", "--quiet", "--initial-branch=main")
    _git(small, "add", "baselines")
    _git(small, "commit", "--quiet", "-m", "baseline")
    yield small


def test_gate_with_baseline_ref_gates_on_the_committed_baseline_not_the_work_tree(
    committed: Path,
) -> None:
    edit_scenario(
        committed,
        "reads.yaml",
        "read-two-tools-then-ticket",
        lambda s: s["expect"].update(must_execute=["orders.lookup"]),
    )
    assert proctor("run", "--no-baseline", "--report-dir", "rep").exit_code == 0
    # The pull request also re-records the work-tree baseline so that it would pass...
    recorded = proctor("baseline", "record", "--reason", "weaker", "--allow-regression")
    assert recorded.exit_code == 0, recorded.output
    work_tree = proctor("gate", "rep")
    assert work_tree.exit_code == 0, work_tree.output

    # ... but gating on HEAD's baseline still catches the lost check.
    absolute = str(committed / "baselines" / "baseline.json")
    for extra in ((), ("--baseline", absolute), ("--baseline", "./baselines/baseline.json")):
        result = proctor("gate", "rep", "--baseline-ref", "HEAD", *extra)
        assert result.exit_code == 2, (extra, result.output)
        assert LOST_TICKET in result.output


def test_gate_with_an_unknown_ref_is_a_usage_error(committed: Path) -> None:
    assert proctor("run", "--no-baseline", "--report-dir", "rep").exit_code == 0
    result = proctor("gate", "rep", "--baseline-ref", "no-such-ref")
    assert result.exit_code == 64, result.output
    assert "no-such-ref:baselines/baseline.json does not exist" in result.output


# -- baseline record -----------------------------------------------------------------------------


def _baseline_bytes(root: Path) -> dict[str, bytes]:
    files = sorted((root / "baselines").rglob("*.json"))
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in files}


def test_baseline_record_refuses_while_a_check_fails(small: Path) -> None:
    before = _baseline_bytes(small)

    def reword(scenario: dict[str, Any]) -> None:
        scenario["script"][1]["answer"] = "Order ORD-0001 is on its way."

    edit_scenario(small, "reads.yaml", "read-order-lookup", reword)
    result = proctor(
        "baseline", "record", "--reason", "try", "--accept-changed", "read-order-lookup"
    )
    assert result.exit_code == 1, result.output
    assert "refused: 1 check(s) fail" in result.output
    assert "read-order-lookup: answer_contains:shipped" in result.output
    assert _baseline_bytes(small) == before


def test_baseline_record_refuses_to_drop_a_check_unless_allowed(small: Path) -> None:
    before = _baseline_bytes(small)
    edit_scenario(
        small,
        "reads.yaml",
        "read-two-tools-then-ticket",
        lambda s: s["expect"].update(must_execute=["orders.lookup"]),
    )
    refused = proctor("baseline", "record", "--reason", "drop a check")
    assert refused.exit_code == 2, refused.output
    assert "lost check must_execute:tickets.create" in refused.output
    assert "--allow-regression" in refused.output
    assert _baseline_bytes(small) == before  # nothing written, traces included

    allowed = proctor("baseline", "record", "--reason", "drop a check", "--allow-regression")
    assert allowed.exit_code == 0, allowed.output
    assert "WARNING: recording a WEAKER baseline" in allowed.output
    baseline = load_baseline(small / "baselines" / "baseline.json")
    kept = baseline.scenarios["read-two-tools-then-ticket"].checks
    assert "must_execute:tickets.create" not in kept
    assert len(baseline.history) == 2
    assert baseline.history[-1].allow_regression is True
    assert baseline.history[-1].reason == "drop a check"
    assert "lost check must_execute:tickets.create" in baseline.history[-1].summary
    assert proctor("run").exit_code == 0  # the weaker baseline now gates the weaker suite


def test_a_clean_re_record_appends_history_and_changes_no_metric(small: Path) -> None:
    before = load_baseline(small / "baselines" / "baseline.json")
    result = proctor("baseline", "record", "--reason", "re-record, nothing changed")
    assert result.exit_code == 0, result.output
    assert "no changes" in result.output
    after = load_baseline(small / "baselines" / "baseline.json")
    assert after.metrics == before.metrics
    assert after.scenarios == before.scenarios  # same checks, same trace digests
    assert after.history[:-1] == before.history
    assert after.history[-1].reason == "re-record, nothing changed"
    assert after.history[-1].allow_regression is False


# -- reports ---------------------------------------------------------------------------------------


def parse_page(path: Path) -> Page:
    return parse_html(path.read_text("utf-8"))


def assert_self_contained(path: Path) -> None:
    html = path.read_text("utf-8")
    page = parse_page(path)
    external = [v for v in page.links if not v.startswith("#")]
    assert external == []
    assert "url(" not in html and "@import" not in html
    assert "http://" not in html and "https://" not in html


def test_the_reports_render_every_scenario_and_the_gate(small: Path) -> None:
    result = proctor("run", "--report-dir", "rep")
    assert result.exit_code == 0, result.output
    report = small / "rep" / "report.html"
    assert_self_contained(report)
    text = "".join(parse_page(report).text)
    for sid in SMALL_IDS:
        assert sid in text
    assert "NOT a model-quality measurement" in text

    suite = ElementTree.parse(small / "rep" / "junit.xml").getroot()
    names = [case.get("name") for case in suite.iter("testcase")]
    assert sorted(names) == sorted([*SMALL_IDS, "gate"])
    assert suite.get("tests") == str(len(SMALL_IDS) + 1)
    assert suite.get("failures") == "0"
