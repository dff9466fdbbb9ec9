"""Drift: a changed trace digest is reported with a readable diff, and is not a regression."""

from __future__ import annotations

from harness._baseline import Baseline, MetricRecord, ScenarioRecord
from harness._gate import gate, trace_diff_lines
from harness._results import MetricResult
from harness._spans import Span, ToolCallSpan
from harness._trace import AuditSummary, Trace
from tests.trace_factory import make_trace


def trace(outcome: str, *, run_id: str = "run-1", answer: str = "done") -> Trace:
    spans: list[Span] = [
        ToolCallSpan(
            id="s1",
            step=1,
            call_id="c1",
            provider_call_id="p1",
            tool="fs.delete",
            known_tool=True,
            arguments={"path": "notes/a.txt"},
            effect="block",
            rule_ids=["no-delete"],
            reason="blocked_by_rule",
            outcome=outcome,  # type: ignore[arg-type]
        )
    ]
    return make_trace(
        spans,
        sid="delete-notes",
        run_id=run_id,
        scenario_file="scenarios/delete.yaml",
        status="blocked",
        answer=answer,
        turns=2,
        audit=AuditSummary(events=3, head=None, valid=True),
    )

def baseline_of(old: Trace) -> Baseline:
    return Baseline(
        version=1,
        metrics={"contract": MetricRecord(passed=1, total=1, rate=1.0)},
        scenarios={"delete-notes": ScenarioRecord(checks=["contract"], trace_digest=old.digest)},
        history=[],
    )


METRICS = [MetricResult("contract", 1, 1)]
INVENTORY = {"delete-notes": ["contract"]}


def test_the_run_id_alone_is_not_drift() -> None:
    old = trace("blocked", run_id="run-1")
    new = trace("blocked", run_id="run-2")
    result = gate(METRICS, INVENTORY, {"delete-notes": new.digest}, baseline_of(old))
    assert result.drift == ()


def test_drift_names_the_changed_field_and_is_not_a_regression() -> None:
    old, new = trace("blocked"), trace("executed")
    result = gate(
        METRICS,
        INVENTORY,
        {"delete-notes": new.digest},
        baseline_of(old),
        current_traces={"delete-notes": new.stable_dict()},
        baseline_traces={"delete-notes": old.stable_dict()},
    )
    assert not result.regressed
    [drift] = result.drift
    assert (drift.scenario_id, drift.old_digest, drift.new_digest) == (
        "delete-notes",
        old.digest,
        new.digest,
    )
    assert "spans[0].outcome: 'blocked' -> 'executed'" in drift.diff.splitlines()
    assert "status" not in drift.diff  # unchanged fields are not listed


def test_without_traces_drift_says_only_that_the_digest_changed() -> None:
    old, new = trace("blocked"), trace("executed")
    result = gate(METRICS, INVENTORY, {"delete-notes": new.digest}, baseline_of(old))
    [drift] = result.drift
    assert "digest changed" in drift.diff
    assert "no stored traces" in drift.diff
    assert "outcome" not in drift.diff


def test_a_stale_stored_baseline_trace_is_not_diffed_as_if_it_were_the_baseline() -> None:
    old, new, unrelated = trace("blocked"), trace("executed"), trace("held")
    result = gate(
        METRICS,
        INVENTORY,
        {"delete-notes": new.digest},
        baseline_of(old),
        current_traces={"delete-notes": new.stable_dict()},
        baseline_traces={"delete-notes": unrelated.stable_dict()},
    )
    [drift] = result.drift
    assert "does not match the baseline digest" in drift.diff
    assert "'held'" not in drift.diff


def test_diff_lines_render_added_removed_and_changed_fields_readably() -> None:
    old = {"spans": [{"outcome": "blocked"}, {"kind": "loop"}], "status": "blocked", "x y": 1}
    new = {"spans": [{"outcome": "blocked"}], "status": "completed", "x y": 1, "extra": True}
    lines = trace_diff_lines(old, new)
    assert lines == [
        "extra: added True",
        "spans[1]: removed {'kind': 'loop'}",
        "status: 'blocked' -> 'completed'",
    ]


def test_a_long_diff_is_truncated_with_a_count() -> None:
    old = {"spans": [{"n": i} for i in range(60)]}
    new = {"spans": [{"n": i + 1} for i in range(60)]}
    lines = trace_diff_lines(old, new, limit=5)
    assert len(lines) == 6
    assert lines[0] == "spans[0].n: 0 -> 1"
    assert lines[-1] == "... and 55 more changes"
