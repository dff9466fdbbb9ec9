"""The baseline a focused run (`--id`, `-k`, `--tag`, `--limit`) is gated against.

A partial run is compared with the baseline's entries for the scenarios it selected, and only
those: what was not selected is neither a lost scenario nor an evidence shrink nor a rate drop.
The gated rates of those entries are recomputed from their recorded check ids (each id names
its kind, hence its metric: `harness._checks.metric_of_check_id`). `proctor baseline record`
refuses while any check fails, so every recorded check passed; should a baseline say otherwise
(a metric with passed < total), the failures cannot be placed on a scenario and the partial gate
counts the selected entries as passing: the strict reading, which can only gate more.
A metric the selected entries never recorded is still gated by the whole baseline's rate
(`with_unrecorded_metric_drops`): a new failing expectation of that kind in a selected scenario
is a rate drop, as it would be in a full run.

Coverage is a property of the whole suite (every rule decided by some scenario), so a partial
run does not gate it; the partial run's report says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from harness._baseline import Baseline, MetricRecord, rate_of
from harness._checks import metric_of_check_id
from harness._metrics import format_rate
from harness._results import GateResult, MetricResult, Regression


def narrowed_baseline(baseline: Baseline, selected: Iterable[str]) -> Baseline:
    """`baseline` as if it had recorded only the `selected` scenarios it knows."""
    kept = {sid: baseline.scenarios[sid] for sid in selected if sid in baseline.scenarios}
    counts = dict.fromkeys(baseline.metrics, 0)
    for record in kept.values():
        for check_id in record.checks:
            metric = metric_of_check_id(check_id)
            if metric is not None:  # an unplaceable id still gates as a lost check
                counts[metric] = counts.get(metric, 0) + 1
    metrics = {
        name: MetricRecord(passed=total, total=total, rate=rate_of(total, total))
        for name, total in counts.items()
    }
    return baseline.model_copy(update={"scenarios": kept, "metrics": metrics, "coverage": None})


def with_unrecorded_metric_drops(
    result: GateResult, full: Baseline, narrowed: Baseline, current: Iterable[MetricResult]
) -> GateResult:
    """`result` plus a rate drop for each metric the selected entries have no evidence of whose
    rate in this run fell below the whole baseline's (the narrowed gate cannot see those)."""
    drops = []
    for metric in current:
        whole = full.metrics.get(metric.name)
        part = narrowed.metrics.get(metric.name)
        if whole is None or whole.total == 0 or metric.total == 0:
            continue
        if part is not None and part.total > 0:
            continue  # the narrowed baseline gates it
        if metric.passed * whole.total < whole.passed * metric.total:
            then, now = (
                format_rate(whole.passed, whole.total),
                format_rate(metric.passed, metric.total),
            )
            drops.append(
                Regression(
                    "rate_drop",
                    f"{metric.name}: rate {now} in the selected scenarios, baseline {then} "
                    "(their baseline entries had no such check)",
                    metric=metric.name,
                )
            )
    if not drops:
        return result
    return dataclasses.replace(result, regressions=(*result.regressions, *drops))
