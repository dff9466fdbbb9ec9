"""`pytest --proctor` in real pytest sessions (pytester) over a small copy of the shipped suite
with its own baseline: outcomes, failure text, selection, -x, --lf, xdist and the gate.

Every session runs in a subprocess: an in-process session drops at its end the modules it
imported, and the harness imports some lazily (deepdiff for a drift diff, which imports
numpy); a C extension cannot be imported twice in one process, so a later test importing it
again broke. The sessions load this plugin only (and xdist where asked), through `-p`; the
entry point itself is exercised with autoloading on.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from harness._errors import ScenarioError
from harness._suite import load_checked_suite
from tests.small_suite import build_small_suite, edit_scenario

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

LOST_TICKET_CHECK = (
    "lost_check  scenario read-two-tools-then-ticket lost check must_execute:tickets.create"
)


@pytest.fixture(scope="module")
def small_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("small-suite")
    build_small_suite(root)
    (root / "pytest.ini").write_text("[pytest]\n", "utf-8")  # the rootdir: the copy itself
    return root


@pytest.fixture
def suite(small_template: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The small suite (5 scenarios) and its baseline in the session's directory."""
    shutil.copytree(small_template, pytester.path, dirs_exist_ok=True)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return pytester.path


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A session in a subprocess with the plugin loaded (and no other)."""
    return pytester.runpytest_subprocess("-p", "harness.pytest_plugin", *args)


def expect_text(root: Path, file: str, sid: str, text: str) -> None:
    """Make a scenario fail one check (`answer_contains:<text>`) without changing its inputs
    (expectations are not inputs)."""

    def add(scenario: dict[str, Any]) -> None:
        scenario["expect"].setdefault("answer_contains", []).append(text)

    edit_scenario(root, file, sid, add)


def drop_ticket_check(root: Path) -> None:
    """Every item still passes; the baseline's `must_execute:tickets.create` is lost."""

    def drop(scenario: dict[str, Any]) -> None:
        assert scenario["expect"]["must_execute"] == ["orders.lookup", "tickets.create"]
        scenario["expect"]["must_execute"] = ["orders.lookup"]

    edit_scenario(root, "reads.yaml", "read-two-tools-then-ticket", drop)


def test_every_scenario_is_an_item_and_a_clean_run_passes_the_gate(
    suite: Path, pytester: pytest.Pytester
) -> None:
    result = run(pytester, "--proctor", "-v")
    result.assert_outcomes(passed=5)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "scenarios/blocks.yaml::block-delete-by-rule PASSED*",
            "scenarios/reads.yaml::read-order-lookup PASSED*",
            "*= Proctor gate: passed =*",
            "gated against baselines/baseline.json",
        ]
    )
    assert "PARTIAL RUN" not in result.stdout.str()


def test_a_failed_check_fails_its_item_naming_the_check_id_and_why(
    suite: Path, pytester: pytest.Pytester
) -> None:
    expect_text(suite, "reads.yaml", "read-order-lookup", "delivered")
    result = run(pytester, "--proctor", "--proctor-no-baseline", "-ra")
    result.assert_outcomes(passed=4, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*_ scenario read-order-lookup _*",
            "1 of * checks failed: answer_contains:delivered",
            "  ✗ read-order-lookup  answer_contains:delivered: *",
            "FAILED scenarios/reads.yaml::read-order-lookup - Failed: 1 of * checks failed*",
        ]
    )


XDIST = ["-p", "xdist.plugin", "-n", "2"]


@pytest.mark.parametrize("workers", [[], XDIST], ids=["serial", "xdist"])
def test_a_regression_fails_the_session_with_the_cli_message_though_every_item_passed(
    suite: Path, pytester: pytest.Pytester, workers: list[str]
) -> None:
    drop_ticket_check(suite)
    result = run(pytester, *workers, "--proctor")
    result.assert_outcomes(passed=5)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*= Proctor gate: FAILED =*",
            "Regressions (2):",
            f"  ▼ {LOST_TICKET_CHECK}: *",
            "*5 passed, 1 gate failed in *",
        ]
    )


def test_no_baseline_option_scores_without_gating(suite: Path, pytester: pytest.Pytester) -> None:
    drop_ticket_check(suite)
    result = run(pytester, "--proctor", "--proctor-no-baseline")
    result.assert_outcomes(passed=5)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*= Proctor: NOT GATED =*", "NOT GATED: --proctor-no-baseline"])
    assert "Regressions" not in result.stdout.str()


def test_without_a_baseline_file_the_run_says_it_is_not_gated(
    suite: Path, pytester: pytest.Pytester
) -> None:
    shutil.rmtree(suite / "baselines")
    drop_ticket_check(suite)
    result = run(pytester, "--proctor")
    result.assert_outcomes(passed=5)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["NOT GATED: no baseline at baselines/baseline.json*"])


def test_k_selects_scenarios_by_id_and_the_partial_run_is_gated_on_them_only(
    suite: Path, pytester: pytest.Pytester
) -> None:
    drop_ticket_check(suite)  # a regression, but in a scenario the run does not select
    result = run(pytester, "--proctor", "-k", "not ticket")
    result.assert_outcomes(passed=4, deselected=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "*= Proctor gate: passed =*",
            "PARTIAL RUN: 4 of 5 scenarios selected by -k 'not ticket'; the gate compares only "
            "these against their baseline entries",
        ]
    )
    selected = run(pytester, "--proctor", "-k", "ticket")
    selected.assert_outcomes(passed=1, deselected=4)
    assert selected.ret == pytest.ExitCode.TESTS_FAILED
    selected.stdout.fnmatch_lines([f"  ▼ {LOST_TICKET_CHECK}: *"])


def test_m_selects_scenarios_by_tag_and_tags_become_declared_markers(
    suite: Path, pytester: pytest.Pytester
) -> None:
    def tag(scenario: dict[str, Any]) -> None:
        scenario["tags"] = [*scenario["tags"], "default-policy", "skip"]

    edit_scenario(suite, "budgets.yaml", "budget-run-limit-stops-a-loop", tag)
    strict = ("--strict-markers", "-W", "error")
    result = run(pytester, "--proctor", *strict, "-m", "smoke")
    result.assert_outcomes(passed=1, deselected=4)  # read-order-lookup: tags [reads, smoke]
    mapped = run(pytester, "--proctor", *strict, "-m", "default_policy and tag_skip", "-v")
    mapped.assert_outcomes(passed=1, deselected=4)  # a tag `skip` never skips a scenario
    mapped.stdout.fnmatch_lines(["*::budget-run-limit-stops-a-loop PASSED*"])


def test_the_flag_alone_collects_the_suite_only_and_paths_add_their_tests(
    suite: Path, pytester: pytest.Pytester
) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    alone = run(pytester, "--proctor", "-v")
    alone.assert_outcomes(passed=5)
    assert "test_plain" not in alone.stdout.str()
    both = run(pytester, "--proctor", "test_plain.py", "-v")
    both.assert_outcomes(passed=6)
    both.stdout.fnmatch_lines(["test_plain.py::test_plain PASSED*"])
    assert "PARTIAL RUN" not in both.stdout.str()


def test_a_path_inside_the_suite_narrows_the_run_to_it(
    suite: Path, pytester: pytest.Pytester
) -> None:
    result = run(pytester, "--proctor", "scenarios/budgets.yaml")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["PARTIAL RUN: 1 of 5 scenarios selected by scenarios/budgets.yaml*"]
    )


def test_x_stops_at_the_first_failed_scenario(suite: Path, pytester: pytest.Pytester) -> None:
    expect_text(suite, "blocks.yaml", "block-delete-by-rule", "never said")
    expect_text(suite, "reads.yaml", "read-order-lookup", "never said")
    every = run(pytester, "--proctor", "--proctor-no-baseline")
    every.assert_outcomes(passed=3, failed=2)
    stopped = run(pytester, "--proctor", "--proctor-no-baseline", "-x")
    stopped.assert_outcomes(failed=1)
    stopped.stdout.fnmatch_lines(["*block-delete-by-rule*", "*stopping after 1 failures*"])


def test_lf_reruns_only_the_failed_scenario(suite: Path, pytester: pytest.Pytester) -> None:
    expect_text(suite, "reads.yaml", "read-order-lookup", "never said")
    first = run(pytester, "--proctor", "--proctor-no-baseline")
    first.assert_outcomes(passed=4, failed=1)
    again = run(pytester, "--proctor", "--proctor-no-baseline", "--lf", "-v")
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(
        ["run-last-failure: rerun previous 1 failure*", "*::read-order-lookup FAILED*"]
    )
    assert "block-delete-by-rule" not in again.stdout.str()


def test_xdist_workers_give_the_same_outcome_and_the_gate_runs_once_over_every_result(
    suite: Path, pytester: pytest.Pytester
) -> None:
    expect_text(suite, "blocks.yaml", "block-unknown-tool", "never said")
    drop_ticket_check(suite)
    serial = run(pytester, "--proctor")
    parallel = run(pytester, "-p", "xdist.plugin", "--proctor", "-n", "2")
    for result in (serial, parallel):
        result.assert_outcomes(passed=4, failed=1)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        text = result.stdout.str()
        assert text.count("Proctor gate: FAILED") == 1
        assert "PARTIAL RUN" not in text  # every scenario's trace reached the gate
        result.stdout.fnmatch_lines([f"  ▼ {LOST_TICKET_CHECK}: *", "*1 failed, 4 passed*"])
    parallel.stdout.fnmatch_lines(["created: 2/2 workers*"])


def test_an_invalid_scenario_file_is_a_collection_error_with_the_cli_message(
    suite: Path, pytester: pytest.Pytester
) -> None:
    broken = suite / "scenarios" / "broken.yaml"
    broken.write_text(
        "id: broken-one\nrequest: hi\nscript: [{answer: hi}]\nexpect: {must_execute: [no.such]}\n",
        "utf-8",
    )
    with pytest.raises(ScenarioError) as cli:  # what `proctor run` prints after `error: `
        load_checked_suite([suite / "scenarios"])
    result = run(pytester, "--proctor")
    result.assert_outcomes(errors=1)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    text = result.stdout.str()
    assert "ERROR collecting scenarios" in text
    assert "the scenario suite is invalid" in text
    assert str(broken) in str(cli.value)
    for line in str(cli.value).splitlines():
        assert line in text
    assert " passed" not in text  # nothing ran


def test_proctor_options_are_usage_errors_without_the_flag_or_a_baseline(
    suite: Path, pytester: pytest.Pytester
) -> None:
    stray = run(pytester, "--proctor-no-baseline")
    assert stray.ret == pytest.ExitCode.USAGE_ERROR
    stray.stderr.fnmatch_lines(["*--proctor-no-baseline: only with --proctor*"])
    missing = run(pytester, "--proctor", "--proctor-baseline", "nowhere.json")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["*--proctor-baseline: no baseline at nowhere.json*"])
    (suite / "baselines" / "baseline.json").write_text("{not json", "utf-8")
    broken = run(pytester, "--proctor")
    assert broken.ret == pytest.ExitCode.USAGE_ERROR
    broken.stderr.fnmatch_lines(["*the baseline cannot be used: *baseline.json*"])
    nowhere = run(pytester, "--proctor-scenarios", "no-such-dir")
    assert nowhere.ret == pytest.ExitCode.USAGE_ERROR
    nowhere.stderr.fnmatch_lines(["*no scenario suite at no-such-dir*"])


def test_help_shows_the_options(suite: Path, pytester: pytest.Pytester) -> None:
    result = run(pytester, "--help")
    result.stdout.fnmatch_lines(
        [
            "Proctor scenarios as tests (pytest --proctor):",
            "  --proctor *Collect Proctor's scenarios as test items (one per*",
            "  --proctor-scenarios=PATH",
            "  --proctor-baseline=FILE",
            "  --proctor-no-baseline",
        ]
    )


def test_without_the_flag_nothing_is_collected_and_no_harness_module_is_imported(
    suite: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD")  # the entry point loads the plugin
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    pytester.makeconftest(
        "import sys\n\n\n"
        "def pytest_unconfigure(config):\n"
        "    with open('modules.txt', 'w') as out:\n"
        "        out.write('\\n'.join(sorted(sys.modules)))\n"
    )
    # Other installed plugins (an extra's, e.g. langsmith's) may import anything: what counts is
    # what Proctor's plugin adds over a session without it.
    pytester.runpytest_subprocess("-p", "no:proctor").assert_outcomes(passed=1)
    without = set((suite / "modules.txt").read_text("utf-8").split())
    result = pytester.runpytest_subprocess("-v")
    result.assert_outcomes(passed=1)
    assert "scenarios/" not in result.stdout.str()
    modules = set((suite / "modules.txt").read_text("utf-8").split())
    assert "harness.pytest_plugin" in modules  # the plugin was loaded: the check means something
    assert "harness.pytest_plugin" not in without
    ours = {m for m in modules if m.split(".")[0] in ("harness", "governance")}
    assert ours == {"harness", "harness.pytest_plugin"}
    added = {m.split(".")[0] for m in modules - without}
    assert not {"pydantic", "click", "yaml", "governance"} & added
