"""A regression line names its metric, scenario and check, and never twice over: the subject
in front of a detail that already names it printed `tool_precision: tool_precision: ...`."""

from __future__ import annotations

import re

import pytest

from harness._gate import CoverageState, coverage_regressions, gate
from harness._metrics import compute_metrics
from harness._results import Regression
from harness.reports._common import regression_text
from tests.unit.harness.test_baseline_record import BASE_CHECKS, c, record


def _every_kind() -> list[Regression]:
    baseline = record(BASE_CHECKS)
    now = [
        c("delete-notes", "contract", "contract", passed=False),
        c("delete-notes", "must_not_execute:fs.delete", "must_not_execute"),
    ]
    inventory = {"delete-notes": [ch.id for ch in now]}
    result = gate(compute_metrics(now), inventory, {"delete-notes": "x"}, baseline)
    coverage = coverage_regressions(
        {"p.yaml": CoverageState((), ("rule:a", "rule:new"))},
        {"p.yaml": CoverageState(("rule:a",), ())},
    )
    gone = coverage_regressions({}, {"q.yaml": CoverageState(("rule:b",), ())})
    found = [*result.regressions, *coverage, *gone]
    kinds = {r.kind for r in found}
    assert {"rate_drop", "evidence_shrink", "lost_scenario", "lost_check", "lost_coverage"} <= kinds
    return found


@pytest.mark.parametrize("regression", _every_kind(), ids=lambda r: f"{r.kind}-{r.detail[:30]}")
def test_a_regression_line_adds_no_second_mention_of_its_subjects(regression: Regression) -> None:
    line = regression_text(regression)
    parts = [p for p in (regression.metric, regression.scenario_id, regression.check_id) if p]
    for token in {t for p in parts for t in p.split()}:
        in_line, in_detail = _count(line, token), _count(regression.detail, token)
        # named at least once, and never again in front of a detail that already names it
        assert in_line == max(1, in_detail), (token, line)


def _count(text: str, name: str) -> int:
    return len(re.findall(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text))


def test_a_detail_that_does_not_name_its_subject_gets_the_subject_in_front() -> None:
    bare = Regression("rate_drop", "rate fell from 100% to 50%", metric="tool_precision")
    assert regression_text(bare) == "tool_precision: rate fell from 100% to 50%"
