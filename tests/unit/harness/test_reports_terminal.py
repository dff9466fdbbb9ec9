"""The terminal report: headline, metric table, failures, regressions, drift, closing counts."""

from __future__ import annotations

from harness._results import MetricResult, SuiteResult
from harness._trace import DETERMINISTIC_NOTICE
from harness.reports import render_terminal
from tests.unit.harness.test_reports_sample import clean_result, sample_result


def _row(text: str, metric: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(metric + " "))
    return line.split()


def test_first_line_names_the_provider_and_the_deterministic_notice_verbatim() -> None:
    first = render_terminal(sample_result()).splitlines()[0]
    assert "replay (scripted)" in first
    assert DETERMINISTIC_NOTICE in first


def test_a_live_run_says_live_and_never_carries_the_notice() -> None:
    text = render_terminal(clean_result(live=True))
    assert "live run" in text.splitlines()[0]
    assert "openai (gpt-x)" in text.splitlines()[0]
    assert DETERMINISTIC_NOTICE not in text


def test_metric_rows_show_counts_rate_baseline_and_signed_delta() -> None:
    text = render_terminal(sample_result())
    assert _row(text, "task_success_rate")[1:] == ["1/3", "33.3%", "66.7%", "-33.3", "pp"]
    assert _row(text, "unsafe_action_block_rate")[1:] == ["1/1", "100.0%", "100.0%", "±0.0", "pp"]


def test_a_metric_with_nothing_to_count_is_absent_never_100_percent() -> None:
    row = _row(render_terminal(sample_result()), "guardrail_rate")
    assert row == ["guardrail_rate", "0/0", "absent", "absent"]
    assert not any("100" in cell for cell in row)


def test_baseline_and_delta_are_blank_without_a_baseline() -> None:
    text = render_terminal(sample_result(gate=False))
    assert _row(text, "task_success_rate") == ["task_success_rate", "1/3", "33.3%"]
    assert " pp" not in text and "Regressions" not in text


def test_a_metric_only_the_baseline_has_is_shown_absent_now() -> None:
    assert _row(render_terminal(sample_result()), "retired_rate") == [
        "retired_rate", "-", "absent", "100.0%",
    ]


def test_each_failed_check_is_listed_with_scenario_id_and_why() -> None:
    text = render_terminal(sample_result())
    assert "Failed checks (2):" in text
    assert "delete-notes  answer_not_contains:deleted: answer said <script>" in text
    assert "must_execute:fs.read" not in text  # passed checks are not listed


def test_terminal_control_sequences_from_a_trace_cannot_reach_the_terminal() -> None:
    text = render_terminal(sample_result())
    assert "\x1b" not in text and "\x00" not in text
    assert "looped \\x1b[31mRED\\x1b[0m \\x00 nul" in text


def test_regressions_drift_and_new_scenarios_are_listed_with_the_diff_indented() -> None:
    text = render_terminal(sample_result())
    assert "rate_drop  task_success_rate: 66.7% -> 33.3%" in text
    assert "lost_check  delete-notes › no_loop: was passing" in text
    lines = text.splitlines()
    at = lines.index("  ~ delete-notes  sha256:old → sha256:new")
    assert lines[at + 1 : at + 3] == ["    --- old", "    +++ new"]
    assert "  + refund-held" in lines


def test_the_closing_line_counts_scenarios_checks_and_regressions() -> None:
    last = render_terminal(sample_result()).rstrip("\n").splitlines()[-1]
    assert last == (
        "3 scenario(s) · checks 3 passed, 2 failed · 2 regression(s) · "
        "exit 2 (a gated metric regressed against the baseline)"
    )


def test_a_clean_run_lists_no_failures_and_closes_with_exit_0() -> None:
    text = render_terminal(clean_result())
    assert "Failed checks" not in text and "Regressions" not in text
    assert text.rstrip().endswith("exit 0 (clean)")


def test_an_empty_suite_still_says_it_is_deterministic_and_has_no_metrics() -> None:
    text = render_terminal(SuiteResult(run_id="r", traces=(), checks=(), metrics=()))
    assert DETERMINISTIC_NOTICE in text.splitlines()[0]
    assert "no metrics" in text
    assert "0 scenario(s)" in text


def test_failed_checks_without_a_gate_exit_1() -> None:
    result = sample_result(gate=False)
    assert result.metrics[1] == MetricResult("task_success_rate", 1, 3)
    assert render_terminal(result).rstrip().endswith(
        "exit 1 (a scenario check failed; nothing gated regressed)"
    )
