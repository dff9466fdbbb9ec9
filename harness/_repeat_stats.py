"""Statistics of a repeated live run: per scenario passes out of K, pass@k and pass^k; per
metric the pooled rate with a Wilson 95% score interval.

Pure: values to values, no I/O, no clock. A live model answers differently run to run, so one
run's rate is a sample; the interval says how far the true rate may plausibly be from it, and
the live gate (`harness._live_gate`) compares intervals, never single runs.

Limit: the pooled interval treats every check of every run as an independent trial, yet the
K repeats of one scenario are correlated (a scenario the model finds hard fails in most runs),
so the interval is narrower than the data supports; more scenarios tighten it honestly, more
repeats of the same ones less than it shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from harness._checks import METRIC_OF
from harness._metrics import METRICS
from harness._repeat_values import MetricRepeats, ScenarioRepeats
from harness._repeat_values import format_interval as format_interval
from harness._repeat_values import wilson_interval as wilson_interval
from harness._results import CheckResult


def scenario_repeats(runs: Sequence[Iterable[CheckResult]]) -> tuple[ScenarioRepeats, ...]:
    """Each scenario's passes out of the runs it appears in (K runs: one check list each), in
    the order scenarios first appear."""
    order: dict[str, None] = {}
    passes: dict[str, int] = {}
    seen_in: dict[str, int] = {}
    counts: dict[str, dict[str, list[int]]] = {}
    every: dict[str, set[str]] = {}  # check ids of every run of the scenario so far
    some: dict[str, set[str]] = {}  # ... of some run
    for checks in runs:
        this_run: dict[str, set[str]] = {}
        ok: dict[str, bool] = {}
        for check in checks:
            order.setdefault(check.scenario_id)
            ok[check.scenario_id] = ok.get(check.scenario_id, True) and check.passed
            metric = METRIC_OF[check.kind]
            cell = counts.setdefault(check.scenario_id, {}).setdefault(metric, [0, 0])
            cell[0] += int(check.passed)
            cell[1] += 1
            this_run.setdefault(check.scenario_id, set()).add(check.id)
        for sid, ids in this_run.items():
            every[sid] = every[sid] & ids if sid in every else set(ids)
            some.setdefault(sid, set()).update(ids)
        for sid, passed in ok.items():
            seen_in[sid] = seen_in.get(sid, 0) + 1
            passes[sid] = passes.get(sid, 0) + int(passed)
    return tuple(
        ScenarioRepeats(
            sid,
            passes[sid],
            seen_in[sid],
            {m: (c[0], c[1]) for m, c in sorted(counts[sid].items())},
            tuple(sorted(every[sid])),
            some_checks=tuple(sorted(some[sid])),
        )
        for sid in order
    )


def pooled_metrics(
    scenarios: Iterable[ScenarioRepeats], only: Iterable[str] | None = None
) -> tuple[MetricRepeats, ...]:
    """Every metric with checks, in `METRICS` order, summed over `scenarios` (or over the ids
    in `only`)."""
    wanted = None if only is None else set(only)
    passed = dict.fromkeys(METRICS, 0)
    total = dict.fromkeys(METRICS, 0)
    for scenario in scenarios:
        if wanted is not None and scenario.scenario_id not in wanted:
            continue
        for name, (p, t) in scenario.metrics.items():
            passed[name] = passed.get(name, 0) + p
            total[name] = total.get(name, 0) + t
    return tuple(MetricRepeats(n, passed[n], total[n]) for n in passed if total[n])
