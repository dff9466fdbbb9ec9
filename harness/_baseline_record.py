"""Recording a baseline: a new `Baseline` from a scored run, checked against the previous one.

Apart from `harness._baseline` (the file format) because recording asks the gate what a new
baseline would lose, and the gate reads the file format: one direction, no import cycle.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence

from governance import Clock
from harness._baseline import (
    BASELINE_VERSION,
    AcceptedChange,
    Baseline,
    CoverageRecord,
    HistoryRecord,
    MetricRecord,
    ScenarioRecord,
    metric_results,
    rate_of,
)
from harness._checks import inventory_of
from harness._coverage import PolicyCoverage
from harness._errors import HarnessError
from harness._gate import CoverageState, gate
from harness._identity import ScenarioInputs
from harness._metrics import count_of, format_rate
from harness._results import CheckResult, MetricResult
from harness._trace import Trace

_SUMMARY_REGRESSIONS = 5


def build_baseline(
    checks: Iterable[CheckResult],
    metrics: Iterable[MetricResult],
    traces: Iterable[Trace],
    *,
    reason: str,
    clock: Clock,
    previous: Baseline | None,
    allow_regression: bool,
    coverage: Iterable[PolicyCoverage] = (),
    inputs: Mapping[str, ScenarioInputs] | None = None,
    accepted: Sequence[AcceptedChange] = (),
) -> Baseline:
    """A new baseline from a scored run; `previous` history is kept and one record appended.
    A run that would record exactly what `previous` holds returns `previous` itself: a
    history entry records a change, and there is none.

    `inputs` (by scenario id) are recorded with each scenario; `accepted` are the input changes
    this recording acknowledges, kept in its history record.
    """
    checks = list(checks)
    inventory = inventory_of(checks)
    digests: dict[str, str] = {}
    for trace in traces:
        if trace.scenario_id in digests:
            raise HarnessError(f"two traces for scenario {trace.scenario_id}")
        digests[trace.scenario_id] = trace.digest
    if set(inventory) != set(digests):
        unscored = sorted(set(digests) - set(inventory))
        untraced = sorted(set(inventory) - set(digests))
        raise HarnessError(
            "checks and traces disagree about the scenarios: "
            f"traced but unscored {unscored}, scored but untraced {untraced}"
        )
    if not reason.strip():
        raise HarnessError("a baseline needs a reason (why is it being recorded?)")
    if inputs is not None and set(inputs) != set(digests):
        raise HarnessError(
            f"inputs and traces disagree about the scenarios: {sorted(set(inputs) ^ set(digests))}"
        )
    body = Baseline(
        version=BASELINE_VERSION,
        metrics={
            m.name: MetricRecord(passed=m.passed, total=m.total, rate=rate_of(m.passed, m.total))
            for m in metrics
        },
        scenarios={
            sid: ScenarioRecord(
                checks=ids,
                trace_digest=digests[sid],
                inputs_digest=inputs[sid].digest if inputs is not None else None,
                inputs=dict(inputs[sid].shown) if inputs is not None else None,
            )
            for sid, ids in inventory.items()
        },
        history=[],
        coverage={
            c.policy_file: CoverageRecord(covered=list(c.covered), uncovered=list(c.uncovered))
            for c in coverage
        }
        or None,
    )
    if previous is not None and same_content(body, previous):
        return previous
    failing = sum(not c.passed for c in checks)
    summary = (
        f"{len(inventory)} scenarios, {len(checks)} checks ({failing} failing), "
        f"{sum(1 for m in body.metrics.values() if m.total)} metrics present"
    )
    refusals = record_refusals(body, previous)
    if refusals:
        shown = "; ".join(refusals[:_SUMMARY_REGRESSIONS])
        more = len(refusals) - _SUMMARY_REGRESSIONS
        summary += f"; regressions vs previous: {shown}"
        if more > 0:
            summary += f"; and {more} more"
    record = HistoryRecord(
        reason=reason.strip(),
        recorded_at=_iso_utc(clock.now()),
        allow_regression=allow_regression,
        summary=summary,
        accepted_changes=sorted(accepted, key=lambda a: a.scenario),
    )
    old_history = list(previous.history) if previous is not None else []
    return body.model_copy(update={"history": [*old_history, record]})


def same_content(one: Baseline, other: Baseline) -> bool:
    """Whether two baselines gate the same way: everything but their history is equal."""
    return one.model_dump(exclude={"history"}) == other.model_dump(exclude={"history"})


def _iso_utc(moment: dt.datetime) -> str:
    if moment.tzinfo is None:
        raise HarnessError("the clock returned a naive datetime; a Clock must return aware UTC")
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def failing_checks(checks: Iterable[CheckResult]) -> list[CheckResult]:
    """Checks that failed: `proctor baseline record` refuses to record while there are any."""
    return [c for c in checks if not c.passed]


def record_refusals(current: Baseline, previous: Baseline | None) -> list[str]:
    """Why recording `current` over `previous` needs --allow-regression (empty: it does not).

    The same comparison the gate makes: a lower rate, a smaller total, a dropped check id or
    scenario, each named.
    """
    if previous is None:
        return []
    result = gate(
        metric_results(current).values(),
        {sid: s.checks for sid, s in current.scenarios.items()},
        {sid: s.trace_digest for sid, s in current.scenarios.items()},
        previous,
        current_coverage=None
        if current.coverage is None
        else {
            name: CoverageState(tuple(r.covered), tuple(r.uncovered))
            for name, r in current.coverage.items()
        },
    )
    return [r.detail for r in result.regressions]


def baseline_diff(old: Baseline | None, new: Baseline) -> str:
    """A readable diff of two baselines: metric changes, then added/removed scenarios and checks."""
    if old is None:
        return (
            f"new baseline: {len(new.metrics)} metrics, {len(new.scenarios)} scenarios, "
            f"{sum(len(s.checks) for s in new.scenarios.values())} checks"
        )
    lines: list[str] = []
    metric_lines: list[str] = []
    for name in sorted(set(old.metrics) | set(new.metrics)):
        before, after = old.metrics.get(name), new.metrics.get(name)
        was = format_rate(before.passed, before.total) if before else "not recorded"
        now = format_rate(after.passed, after.total) if after else "not recorded"
        if was == now:
            continue
        delta = (after.total if after else 0) - (before.total if before else 0)
        evidence = f" (evidence {delta:+d})" if delta else ""
        metric_lines.append(f"  {name}: {was} -> {now}{evidence}")
    if metric_lines:
        lines += ["metrics:", *metric_lines]
    scenario_lines: list[str] = []
    for sid in sorted(set(new.scenarios) - set(old.scenarios)):
        scenario_lines.append(f"  + {sid} ({count_of(len(new.scenarios[sid].checks), 'check')})")
    for sid in sorted(set(old.scenarios) - set(new.scenarios)):
        scenario_lines.append(f"  - {sid} ({count_of(len(old.scenarios[sid].checks), 'check')})")
    if scenario_lines:
        lines += ["scenarios:", *scenario_lines]
    check_lines: list[str] = []
    changed_traces: list[str] = []
    changed_inputs: list[str] = []
    for sid in sorted(set(old.scenarios) & set(new.scenarios)):
        was_ids, now_ids = set(old.scenarios[sid].checks), set(new.scenarios[sid].checks)
        check_lines += [f"  {sid}: + {c}" for c in sorted(now_ids - was_ids)]
        check_lines += [f"  {sid}: - {c}" for c in sorted(was_ids - now_ids)]
        if old.scenarios[sid].trace_digest != new.scenarios[sid].trace_digest:
            changed_traces.append(f"  {sid}")
        if old.scenarios[sid].inputs_digest != new.scenarios[sid].inputs_digest:
            changed_inputs.append(f"  {sid}")
    if check_lines:
        lines += ["checks:", *check_lines]
    if changed_inputs:
        lines += ["inputs changed:", *changed_inputs]
    if changed_traces:
        lines += ["traces changed:", *changed_traces]
    return "\n".join(lines) if lines else "no changes"
