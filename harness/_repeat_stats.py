"""Statistics of a repeated live run: per scenario passes out of K, pass@k and pass^k; per
metric the pooled rate with a Wilson 95% score interval.

Pure: values to values, no I/O, no clock. A live model answers differently run to run, so one
run's rate is a sample; the interval says how far the true rate may plausibly be from it, and
the live gate (`harness._live_gate`) compares intervals, never single runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from harness._checks import METRIC_OF
from harness._metrics import METRICS
from harness._results import CheckResult

# The two-sided 95% normal quantile (Φ⁻¹(0.975)), to the precision of a double.
Z_95 = 1.959963984540054


def wilson_interval(passed: int, total: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of `passed` successes in `total` trials; None for no trials.

    Unlike the normal ("Wald") interval it is never empty or degenerate at 0/n and n/n, and it
    stays inside [0, 1]: 5/5 gives about [0.566, 1], not [1, 1].
    """
    if total < 0 or passed < 0 or passed > total:
        raise ValueError(f"need 0 <= passed <= total, got {passed}/{total}")
    if total == 0:
        return None
    n = total
    p = passed / n
    z2 = z * z
    denominator = 1 + z2 / n
    center = (p + z2 / (2 * n)) / denominator
    half = (z / denominator) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    # At 0/n and n/n the exact bound is 0 or 1; float rounding must not leave 1e-17 behind.
    low = 0.0 if passed == 0 else max(0.0, center - half)
    high = 1.0 if passed == total else min(1.0, center + half)
    return low, high


@dataclass(frozen=True, slots=True)
class ScenarioRepeats:
    """One scenario over K runs: a run passes when every (scored) check of it passes."""

    scenario_id: str
    passes: int
    runs: int
    # metric -> (passed, total) over all runs: what a live baseline records per scenario
    metrics: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def pass_at_k(self) -> bool:
        """At least one of the K runs passed."""
        return self.passes > 0

    @property
    def pass_hat_k(self) -> bool:
        """pass^k: all K runs passed."""
        return self.runs > 0 and self.passes == self.runs


@dataclass(frozen=True, slots=True)
class MetricRepeats:
    """A metric's checks pooled over every run of every scenario, with its Wilson interval."""

    name: str
    passed: int
    total: int

    @property
    def rate(self) -> float | None:
        return None if self.total == 0 else self.passed / self.total

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.passed, self.total)


def scenario_repeats(runs: Sequence[Iterable[CheckResult]]) -> tuple[ScenarioRepeats, ...]:
    """Each scenario's passes out of the runs it appears in (K runs: one check list each), in
    the order scenarios first appear."""
    order: dict[str, None] = {}
    passes: dict[str, int] = {}
    seen_in: dict[str, int] = {}
    counts: dict[str, dict[str, list[int]]] = {}
    for checks in runs:
        ok: dict[str, bool] = {}
        for check in checks:
            order.setdefault(check.scenario_id)
            ok[check.scenario_id] = ok.get(check.scenario_id, True) and check.passed
            metric = METRIC_OF[check.kind]
            cell = counts.setdefault(check.scenario_id, {}).setdefault(metric, [0, 0])
            cell[0] += int(check.passed)
            cell[1] += 1
        for sid, passed in ok.items():
            seen_in[sid] = seen_in.get(sid, 0) + 1
            passes[sid] = passes.get(sid, 0) + int(passed)
    return tuple(
        ScenarioRepeats(
            sid,
            passes[sid],
            seen_in[sid],
            {m: (c[0], c[1]) for m, c in sorted(counts[sid].items())},
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


def format_interval(interval: tuple[float, float] | None) -> str:
    """`[56.6%, 100.0%]`, or `absent`."""
    if interval is None:
        return "absent"
    return f"[{interval[0] * 100:.1f}%, {interval[1] * 100:.1f}%]"
