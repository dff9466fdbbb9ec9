"""First-time-user papercuts in the reports: pass/fail before the run status (escaped), a word
when "only failing" leaves nothing, and no rows for metrics measured neither now nor before."""

from __future__ import annotations

import re

from harness._results import MetricResult, SuiteResult
from harness.reports import render_html, render_markdown
from tests.unit.harness.test_reports_html import _parse
from tests.unit.harness.test_reports_sample import (
    XSS,
    clean_result,
    make_trace,
    sample_result,
    tool,
    turn,
)

BREAKERS = XSS + " </details></summary></span> ]]> <!-- --> <img src=x onerror=alert(2)> & \"'"


def test_a_run_status_with_markup_and_breakers_is_escaped_and_the_page_stays_balanced() -> None:
    trace = make_trace("s", [turn("s1", 1, text="hi")], status=BREAKERS)
    page = render_html(SuiteResult(run_id="r", traces=(trace,), checks=(), metrics=()))
    parsed = _parse(page)
    assert parsed.errors == [] and parsed.stack == []
    body = page.split('<script type="application/json"', 1)[0]
    assert "<script>alert(1)" not in body and "<img" not in body and "]]>" not in body
    assert '<span class="status">&lt;script&gt;alert(1)&lt;/script&gt; &lt;/details&gt;' in body
    assert parsed.starts_of("img") == []


def test_the_status_pill_says_pass_first_and_the_run_status_is_a_neutral_label() -> None:
    page = render_html(sample_result())
    head = r'data-scenario="([^"]+)"[^>]*>\s*<summary>(.*?)</summary>'
    heads = dict(re.findall(head, page, re.S))
    # delete-notes was blocked and its answer check failed; read-notes passed.
    assert heads["read-notes"].startswith('<span class="badge b-ok">pass</span> '
                                          '<span class="status">completed</span>')  # fmt: skip
    assert heads["delete-notes"].startswith('<span class="badge b-bad">fail</span> '
                                            '<span class="status">blocked</span>')  # fmt: skip
    assert '<span class="badge b-blocked">' not in "".join(heads.values())


def test_a_passing_scenario_whose_call_was_blocked_wears_a_pass_pill() -> None:
    trace = make_trace(
        "blocked-as-expected",
        [turn("s1", 1, ("fs.delete", "{}")), tool("s2", 1, "fs.delete", "blocked")],
        status="blocked",
    )
    result = SuiteResult(run_id="r", traces=(trace,), checks=(), metrics=())
    head = re.search(r"<summary>(.*?)</summary>", render_html(result).split('id="traces"')[1])
    assert head is not None
    assert head.group(1).startswith('<span class="badge b-ok">pass</span>')
    assert "b-blocked" not in head.group(1).split("</span>", 1)[0]


def test_only_failing_on_a_clean_run_has_a_sentence_the_filter_reveals() -> None:
    page = render_html(clean_result())
    parsed = _parse(page)
    assert "No failing scenarios." in "".join(parsed.text)
    css = parsed.styles[0]
    # Hidden until the checkbox's script adds `only-failing` to the body, then shown.
    assert ".no-failing{display:none}" in css
    assert "body.only-failing .no-failing{display:block}" in css
    assert 'classList.toggle("only-failing", only.checked)' in parsed.scripts[-1][1]


def test_only_failing_with_a_failing_scenario_has_no_such_sentence() -> None:
    assert "No failing scenarios." not in render_html(sample_result())


def _md_rows(result: SuiteResult) -> dict[str, str]:
    lines = render_markdown(result).splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| metric"))
    rows: dict[str, str] = {}
    for line in lines[header + 2 :]:
        if not line.startswith("|"):
            break
        rows[line.split("|")[1].strip()] = line
    return rows


def test_summary_md_lists_no_row_for_a_metric_measured_neither_now_nor_in_the_baseline() -> None:
    result = SuiteResult(
        run_id="r",
        traces=(),
        checks=(),
        metrics=(MetricResult("task_success_rate", 1, 1), MetricResult("guardrail_rate", 0, 0)),
        baseline_metrics={"guardrail_rate": MetricResult("guardrail_rate", 0, 0)},
    )
    rows = _md_rows(result)
    assert list(rows) == ["task\\_success\\_rate"]
    assert "Not measured (no checks in this run or the baseline): `guardrail_rate`" in (
        render_markdown(result)
    )


def test_summary_md_keeps_a_metric_the_baseline_measured_and_this_run_did_not() -> None:
    result = SuiteResult(
        run_id="r",
        traces=(),
        checks=(),
        metrics=(MetricResult("guardrail_rate", 0, 0),),
        baseline_metrics={
            "guardrail_rate": MetricResult("guardrail_rate", 2, 3),
            "retired_rate": MetricResult("retired_rate", 1, 1),
        },
    )
    rows = _md_rows(result)
    assert "absent" in rows["guardrail\\_rate"] and "66.7%" in rows["guardrail\\_rate"]
    assert "absent" in rows["retired\\_rate"] and "100.0%" in rows["retired\\_rate"]
    assert "Not measured" not in render_markdown(result)
