"""Value types of a live, repeated run: repeat counts, Wilson intervals, the live gate's
verdict and the run's summary. Plain frozen dataclasses and one formula; nothing from the rest
of the harness, so `harness._results` can hold a summary without an import cycle.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

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
    # the check ids EVERY run produced (sorted): what a live baseline records, and what a later
    # run must still produce (lost_check). Not those of some runs only: a check that needs
    # evidence (governance_refusal needs a decided call) comes and goes with the model's choices.
    checks: tuple[str, ...] = ()
    # the check ids SOME run produced: a later run is held to the baseline's `checks` against these
    some_checks: tuple[str, ...] = ()
    # the scenario's inputs with the model left out (`harness._suite.planned_inputs`); None
    # when not known (a baseline recorded before inputs were kept)
    inputs_digest: str | None = None

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


@dataclass(frozen=True, slots=True)
class LiveRegression:
    metric: str  # the metric, or the scenario id for the kinds below other than "rate"
    detail: str
    kind: str = "rate"  # rate | absent_metric | lost_scenario | lost_check | changed_inputs


@dataclass(frozen=True, slots=True)
class LiveGateResult:
    baseline_path: str
    baseline_repeat: int
    regressions: tuple[LiveRegression, ...] = ()
    compared: tuple[str, ...] = ()  # metrics compared
    not_in_run: tuple[str, ...] = ()  # baseline scenarios this run did not have
    not_in_baseline: tuple[str, ...] = ()  # scenarios this run had that the baseline lacks
    # a focused run (--id/-k/--tag/--limit): what it selected; compared on those only
    partial: str | None = None
    # the baseline's model when it is not the run's (only with --allow-other-model)
    other_model: str | None = None

    @property
    def regressed(self) -> bool:
        return bool(self.regressions)


@dataclass(frozen=True, slots=True)
class LiveSummary:
    """What a live run's reports say about it beyond one run's checks: who answered, K, the
    repeat statistics, the replay-only expectations skipped, and the live gate (or why not)."""

    model: str
    endpoint_host: str
    repeat: int
    scenarios: tuple[ScenarioRepeats, ...]
    metrics: tuple[MetricRepeats, ...]  # pooled over every run, `scenario_pass` last
    skipped_replay_only: int = 0
    gate: LiveGateResult | None = None
    not_gated_because: str | None = None

    @property
    def statement(self) -> str:
        return (
            f"This IS a model-quality measurement: model {self.model} at {self.endpoint_host}, "
            f"each scenario run {self.repeat} time(s); it measures that model on these "
            "scenarios, not Proctor itself."
        )


def format_interval(interval: tuple[float, float] | None) -> str:
    """`[56.6%, 100.0%]`, or `absent`."""
    if interval is None:
        return "absent"
    return f"[{interval[0] * 100:.1f}%, {interval[1] * 100:.1f}%]"
