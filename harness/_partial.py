"""The baseline a focused run (`--id`, `-k`, `--tag`, `--limit`) is gated against.

A partial run is compared with the baseline's entries for the scenarios it selected, and only
those: what was not selected is neither a lost scenario nor an evidence shrink nor a rate drop.
The gated rates of those entries are recomputed from their recorded check ids (each id names
its kind, hence its metric: `harness._checks.metric_of_check_id`). `proctor baseline record`
refuses while any check fails, so every recorded check passed; should a baseline say otherwise
(a metric with passed < total), the failures cannot be placed on a scenario and the partial gate
counts the selected entries as passing: the strict reading, which can only gate more.

Coverage is a property of the whole suite (every rule decided by some scenario), so a partial
run does not gate it; the partial run's report says so.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness._baseline import Baseline, MetricRecord, rate_of
from harness._checks import metric_of_check_id


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
