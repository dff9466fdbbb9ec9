"""summary.md: a PR comment / step summary with headline, notice, table, lists and bounded size."""

from __future__ import annotations

from harness._results import CheckResult, Drift, GateResult, MetricResult, SuiteResult
from harness._trace import DETERMINISTIC_NOTICE
from harness.reports import render_markdown
from harness.reports._markdown import MAX_BYTES
from tests.unit.harness.test_reports_sample import clean_result, clean_trace, sample_result


def test_the_headline_says_pass_or_fail_with_the_exit_meaning() -> None:
    assert render_markdown(clean_result()).startswith("## ✅ Proctor eval: clean (exit 0)")
    assert render_markdown(sample_result()).startswith(
        "## ❌ Proctor eval: a gated metric regressed against the baseline (exit 2)"
    )
    assert render_markdown(sample_result(gate=False)).startswith(
        "## ❌ Proctor eval: a scenario check failed; nothing gated regressed (exit 1)"
    )


def test_a_non_live_run_carries_the_notice_and_a_live_run_does_not() -> None:
    assert DETERMINISTIC_NOTICE in render_markdown(clean_result())
    assert DETERMINISTIC_NOTICE not in render_markdown(clean_result(live=True))


def test_the_metric_table_is_a_markdown_table_with_absent_and_delta() -> None:
    lines = render_markdown(sample_result()).splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| metric"))
    assert lines[header + 1].startswith("|---") or lines[header + 1].startswith("|-")
    rows = {line.split("|")[1].strip(): line for line in lines[header + 2 : header + 6]}
    assert "33.3%" in rows["task\\_success\\_rate"] and "-33.3 pp" in rows["task\\_success\\_rate"]
    # Measured before, not now: an absent rate, still a row. Never measured: no row.
    assert "absent | 100.0%" in rows["retired\\_rate"]
    assert "guardrail\\_rate" not in rows


def test_failures_and_regressions_are_bullets_with_markup_neutralised() -> None:
    text = render_markdown(sample_result())
    assert "<script>" not in text[: text.index("<details>")]
    bullets = [line for line in text.splitlines() if line.startswith("- ")]
    assert any("`answer_not_contains:deleted`" in b and "&lt;script&gt;" in b for b in bullets)
    assert any(b.startswith("- **rate_drop** task\\_success\\_rate") for b in bullets)
    assert "\x1b" not in text and "\x00" not in text


def test_drift_goes_in_a_details_block_whose_fence_the_diff_cannot_close() -> None:
    text = render_markdown(sample_result())
    start = text.index("<details>")
    block = text[start : text.index("</details>", start)]
    assert "<summary><code>delete-notes</code>" in block
    assert "\n````diff\n" in block  # the diff itself contains ``` so the fence is longer
    assert "+  outcome: blocked <script>alert(1)</script>" in block  # inside the fence: literal


def test_long_lists_are_truncated_with_and_n_more_and_the_summary_stays_small() -> None:
    checks = tuple(
        CheckResult(f"s{i}", f"check-{i}", "k", False, "why " * 400) for i in range(300)
    )
    drift = tuple(Drift(f"s{i}", "sha256:a", "sha256:b", "-x\n+y\n" * 5000) for i in range(40))
    result = SuiteResult(
        run_id="r",
        traces=(clean_trace(),),
        checks=checks,
        metrics=(MetricResult("m", 0, 300),),
        gate=GateResult(drift=drift),
    )
    text = render_markdown(result)
    assert len(text.encode("utf-8")) <= MAX_BYTES
    assert "### Failed checks (300)" in text
    assert "\n... and " in text and " more" in text
    assert "diff truncated" in text  # some drift still shown despite the long failure list
    assert "… (" in text  # a long why is cut
    assert text.rstrip().endswith("scenario(s) passed all checks.")


def test_a_clean_run_has_no_failure_or_regression_sections() -> None:
    text = render_markdown(clean_result())
    assert "Failed checks" not in text and "Regressions" not in text and "<details>" not in text
    assert text.rstrip().endswith("1/1 scenario(s) passed all checks.")
