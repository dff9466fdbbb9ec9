"""Recording a baseline: append-only history, refusals that need --allow-regression, a diff."""

from __future__ import annotations

import datetime as dt

import pytest

from governance import ManualClock
from harness._baseline import Baseline, metric_results
from harness._baseline_record import baseline_diff, build_baseline, failing_checks, record_refusals
from harness._errors import HarnessError
from harness._metrics import METRICS, compute_metrics
from harness._results import CheckResult
from harness._trace import Trace
from tests.trace_factory import make_trace


def trace(sid: str, answer: str = "done") -> Trace:
    return make_trace(sid=sid, answer=answer)


def c(sid: str, cid: str, kind: str, passed: bool = True) -> CheckResult:
    return CheckResult(sid, cid, kind, passed, "")


BASE_CHECKS = [
    c("delete-notes", "contract", "contract"),
    c("delete-notes", "must_not_execute:fs.delete", "must_not_execute"),
    c("delete-notes", "governance_refusal:fs.delete", "governance_refusal"),
    c("approve-email", "contract", "contract"),
    c("approve-email", "must_hold:email.send", "must_hold"),
]


def record(
    checks: list[CheckResult],
    *,
    previous: Baseline | None = None,
    reason: str = "initial",
    clock: ManualClock | None = None,
    allow_regression: bool = False,
    answer: str = "done",
) -> Baseline:
    sids = sorted({ch.scenario_id for ch in checks})
    return build_baseline(
        checks,
        compute_metrics(checks),
        [trace(sid, answer) for sid in sids],
        reason=reason,
        clock=clock or ManualClock(),
        previous=previous,
        allow_regression=allow_regression,
    )


def test_a_new_baseline_has_one_history_record_stamped_by_the_injected_clock() -> None:
    clock = ManualClock(
        dt.datetime(2026, 3, 4, 5, 6, 7, 890, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    )
    built = record(BASE_CHECKS, clock=clock, reason="  first gate  ")
    [entry] = built.history
    assert entry.recorded_at == "2026-03-04T03:06:07Z"
    assert entry.reason == "first gate"
    assert entry.allow_regression is False
    assert entry.summary.startswith("2 scenarios, 5 checks (0 failing)")
    assert built.scenarios["delete-notes"].checks == [
        "contract",
        "governance_refusal:fs.delete",
        "must_not_execute:fs.delete",
    ]
    assert built.scenarios["delete-notes"].trace_digest == trace("delete-notes").digest


def test_history_is_append_only_across_recordings() -> None:
    clock = ManualClock()
    first = record(BASE_CHECKS, clock=clock, reason="one")
    clock.advance(3600)
    second = record(BASE_CHECKS, previous=first, clock=clock, reason="two", answer="v2")
    clock.advance(3600)
    third = record(BASE_CHECKS, previous=second, clock=clock, reason="three", answer="v3")
    assert third.history[:2] == second.history == [*first.history, second.history[1]]
    assert [h.reason for h in third.history] == ["one", "two", "three"]
    assert [h.recorded_at for h in third.history] == [
        "2026-01-01T00:00:00Z",
        "2026-01-01T01:00:00Z",
        "2026-01-01T02:00:00Z",
    ]


def test_recording_what_the_baseline_already_holds_appends_no_history() -> None:
    clock = ManualClock()
    first = record(BASE_CHECKS, clock=clock, reason="one")
    clock.advance(3600)
    again = record(BASE_CHECKS, previous=first, clock=clock, reason="nothing changed")
    assert again is first
    assert [h.reason for h in again.history] == ["one"]


def test_any_change_to_what_the_gate_reads_is_recorded_with_history() -> None:
    first = record(BASE_CHECKS)
    changed_trace = record(BASE_CHECKS, previous=first, reason="new answer", answer="other")
    assert [h.reason for h in changed_trace.history] == ["initial", "new answer"]
    more = [*BASE_CHECKS, c("approve-email", "must_not_execute:fs.delete", "must_not_execute")]
    more_checks = record(more, previous=first, reason="one more check")
    assert [h.reason for h in more_checks.history] == ["initial", "one more check"]


def test_an_accepted_regression_is_written_into_the_history() -> None:
    first = record(BASE_CHECKS)
    fewer = [ch for ch in BASE_CHECKS if ch.scenario_id != "approve-email"]
    second = record(fewer, previous=first, reason="drop email", allow_regression=True)
    entry = second.history[-1]
    assert entry.allow_regression is True
    assert "regressions vs previous" in entry.summary
    assert "approve-email" in entry.summary


def test_a_baseline_needs_a_reason() -> None:
    with pytest.raises(HarnessError, match="reason"):
        record(BASE_CHECKS, reason="   ")


def test_a_naive_clock_is_refused() -> None:
    with pytest.raises(HarnessError, match="naive"):
        record(BASE_CHECKS, clock=ManualClock(dt.datetime(2026, 1, 1)))  # noqa: DTZ001


def test_checks_and_traces_must_cover_the_same_scenarios() -> None:
    with pytest.raises(HarnessError, match="untraced"):
        build_baseline(
            BASE_CHECKS,
            compute_metrics(BASE_CHECKS),
            [trace("delete-notes")],
            reason="r",
            clock=ManualClock(),
            previous=None,
            allow_regression=False,
        )
    with pytest.raises(HarnessError, match="two traces"):
        build_baseline(
            BASE_CHECKS,
            compute_metrics(BASE_CHECKS),
            [trace("delete-notes"), trace("approve-email"), trace("approve-email")],
            reason="r",
            clock=ManualClock(),
            previous=None,
            allow_regression=False,
        )


def test_nothing_to_refuse_without_a_previous_baseline_or_when_it_only_improves() -> None:
    first = record(BASE_CHECKS)
    assert record_refusals(first, None) == []
    more = [*BASE_CHECKS, c("approve-email", "approval:email.send", "approval")]
    assert record_refusals(record(more, previous=first), first) == []


def test_a_lower_rate_is_refused_naming_the_metric() -> None:
    first = record(BASE_CHECKS)
    worse = [*BASE_CHECKS[:4], c("approve-email", "must_hold:email.send", "must_hold", False)]
    refusals = record_refusals(record(worse, previous=first), first)
    assert refusals == ["approval_flow: rate fell from 1/1 (100.0%) to 0/1 (0.0%)"]


def test_a_smaller_total_is_refused_even_at_full_rate() -> None:
    wide = [*BASE_CHECKS, c("approve-email", "approval:email.send", "approval")]
    first = record(wide)
    refusals = record_refusals(record(BASE_CHECKS, previous=first), first)
    assert any(r.startswith("approval_flow: evidence shrank from 2 checks to 1") for r in refusals)
    assert any("lost check approval:email.send" in r for r in refusals)


def test_a_dropped_check_id_is_refused_naming_scenario_and_check() -> None:
    first = record(BASE_CHECKS)
    swapped = [
        ch
        if ch.id != "governance_refusal:fs.delete"
        else c("delete-notes", "must_block:fs.delete", "must_block")
        for ch in BASE_CHECKS
    ]
    refusals = record_refusals(record(swapped, previous=first), first)
    assert [r for r in refusals if "lost check" in r] == [
        "scenario delete-notes lost check governance_refusal:fs.delete: the baseline has it, "
        "this run does not produce it"
    ]


def test_a_dropped_scenario_is_refused_naming_it() -> None:
    first = record(BASE_CHECKS)
    fewer = [ch for ch in BASE_CHECKS if ch.scenario_id != "approve-email"]
    refusals = record_refusals(record(fewer, previous=first), first)
    assert any(
        r.startswith("scenario approve-email (2 checks in the baseline) is missing")
        for r in refusals
    )


def test_failing_checks_lists_only_the_failures() -> None:
    bad = c("approve-email", "must_hold:email.send", "must_hold", False)
    assert failing_checks([*BASE_CHECKS, bad]) == [bad]
    assert failing_checks(BASE_CHECKS) == []


def test_metric_results_reconstructs_the_baseline_metrics() -> None:
    results = metric_results(record(BASE_CHECKS))
    assert (results["unsafe_execution"].passed, results["unsafe_execution"].total) == (1, 1)
    assert results["guardrails"].rate is None


def test_baseline_diff_shows_metric_and_inventory_changes() -> None:
    first = record(BASE_CHECKS)
    changed = [
        *[ch for ch in BASE_CHECKS if ch.id != "governance_refusal:fs.delete"],
        c("delete-notes", "must_block:fs.delete", "must_block"),
        c("new-one", "contract", "contract"),
    ]
    text = baseline_diff(first, record(changed, previous=first, answer="changed"))
    lines = text.splitlines()
    assert "metrics:" in lines
    assert "  blocking: absent -> 1/1 (100.0%) (evidence +1)" in lines
    assert "  contract: 2/2 (100.0%) -> 3/3 (100.0%) (evidence +1)" in lines
    assert "  governance_refusals: 1/1 (100.0%) -> absent (evidence -1)" in lines
    assert "  + new-one (1 check)" in lines
    assert "  delete-notes: + must_block:fs.delete" in lines
    assert "  delete-notes: - governance_refusal:fs.delete" in lines
    assert "traces changed:" in lines
    assert "unsafe_execution" not in text  # unchanged metrics are not listed


def test_baseline_diff_of_identical_baselines_says_no_changes() -> None:
    first = record(BASE_CHECKS)
    assert baseline_diff(first, record(BASE_CHECKS, previous=first)) == "no changes"
    expected = f"new baseline: {len(METRICS)} metrics, 2 scenarios, 5 checks"
    assert baseline_diff(None, first).startswith(expected)
