"""The live gate: a repeated live run against the model's live baseline.

Pure. A live model's rate is a sample, so a rate that is merely lower than the recorded one is
not a regression (that is how a single flake failed CI). A metric regresses only when the whole
Wilson 95% interval of the new rate lies below the whole interval of the baseline's: the new
upper bound is below the baseline's lower bound. Non-overlapping intervals is a conservative
test (it misses some real but small drops) and that is the intended trade: the gate must not
cry wolf on noise, and a real drop across many scenarios separates the intervals quickly
(5/5 on 5 scenarios is [86.7%, 100%]; 0/25 is [0%, 13.3%]). There is no margin setting: the
interval already is the margin, and it narrows honestly as K grows.

Rates are compared over the scenarios both runs have (the baseline's counts re-summed over
them), like for like. What the run lacks is not a pass: in a full run a baseline scenario the
run does not have (lost_scenario), a metric the baseline had and the run does not (absent), a
check id every recorded run of a baseline scenario produced and no run of this one does
(lost_check: a weakened expectation) and a scenario whose inputs changed under the same id
(changed_inputs: re-record deliberately) each regress. A focused run (`partial`:
--id/-k/--tag/--limit) is compared on what it selected only, and says so; the scenarios it
left out are not held against it.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness._live_baseline import LiveBaseline
from harness._repeat_stats import pooled_metrics
from harness._repeat_values import (
    LiveGateResult,
    LiveRegression,
    LiveSummary,
    MetricRepeats,
    ScenarioRepeats,
    format_interval,
    wilson_interval,
)

__all__ = [
    "LiveGateResult",
    "LiveRegression",
    "LiveSummary",
    "live_gate",
    "live_metrics",
    "scenario_pass_metric",
]

SCENARIO_PASS = "scenario_pass"  # a run of a scenario passes when all its checks pass


def scenario_pass_metric(scenarios: Sequence[ScenarioRepeats]) -> MetricRepeats:
    return MetricRepeats(
        SCENARIO_PASS, sum(s.passes for s in scenarios), sum(s.runs for s in scenarios)
    )


def live_gate(
    current: Sequence[ScenarioRepeats],
    baseline: LiveBaseline,
    baseline_path: str,
    *,
    partial: str | None = None,
    other_model: str | None = None,
) -> LiveGateResult:
    """What the run lost against the baseline, and each metric of the common scenarios whose
    new interval lies wholly below the baseline's. `partial` describes a focused run's
    selection (None: a full run, which must have every baseline scenario)."""
    recorded = baseline.as_repeats()
    now_ids = {s.scenario_id for s in current}
    then_ids = {s.scenario_id for s in recorded}
    common = now_ids & then_ids
    now = [s for s in current if s.scenario_id in common]
    then = [s for s in recorded if s.scenario_id in common]
    now_metrics = {m.name: m for m in (*pooled_metrics(now), scenario_pass_metric(now))}
    regressions = _losses(now, then, then_ids - now_ids, partial=partial)
    compared: list[str] = []
    for base in (*pooled_metrics(then), scenario_pass_metric(then)):
        if base.total == 0:
            continue
        compared.append(base.name)
        new = now_metrics.get(base.name)
        base_interval = wilson_interval(base.passed, base.total)
        assert base_interval is not None
        if new is None or new.total == 0:
            regressions.append(
                LiveRegression(
                    base.name,
                    f"{base.name}: absent in this run, baseline {base.passed}/{base.total} "
                    f"{format_interval(base_interval)}; absent is not a pass",
                    "absent_metric",
                )
            )
            continue
        new_interval = wilson_interval(new.passed, new.total)
        assert new_interval is not None
        if new_interval[1] < base_interval[0]:
            regressions.append(
                LiveRegression(
                    base.name,
                    f"{base.name}: {new.passed}/{new.total} {format_interval(new_interval)} lies "
                    f"below the baseline's {base.passed}/{base.total} "
                    f"{format_interval(base_interval)}",
                )
            )
    if partial is None:  # a metric only the lost scenarios had is gone from the run too
        everything = {m.name for m in live_metrics(current) if m.total}
        flagged = {r.metric for r in regressions}
        for base in live_metrics(recorded):
            if base.name not in everything and base.name not in flagged and base.total:
                regressions.append(
                    LiveRegression(
                        base.name,
                        f"{base.name}: absent in this run, baseline {base.passed}/{base.total} "
                        f"{format_interval(base.interval)} (its scenarios are missing); absent "
                        "is not a pass",
                        "absent_metric",
                    )
                )
    return LiveGateResult(
        baseline_path=baseline_path,
        baseline_repeat=baseline.repeat,
        regressions=tuple(regressions),
        compared=tuple(compared),
        not_in_run=tuple(sorted(then_ids - now_ids)),
        not_in_baseline=tuple(sorted(now_ids - then_ids)),
        partial=partial,
        other_model=other_model,
    )


def _losses(
    now: Sequence[ScenarioRepeats],
    then: Sequence[ScenarioRepeats],
    missing: set[str],
    *,
    partial: str | None,
) -> list[LiveRegression]:
    """Scenarios a full run lost, check ids a scenario no longer produces, changed inputs."""
    found: list[LiveRegression] = []
    if partial is None:
        found += [
            LiveRegression(
                sid,
                f"{sid}: in the live baseline but not in this run (lost_scenario); a dropped or "
                "renamed scenario is not a pass: restore it or re-record the live baseline "
                "deliberately",
                "lost_scenario",
            )
            for sid in sorted(missing)
        ]
    before = {s.scenario_id: s for s in then}
    for scenario in now:
        old = before[scenario.scenario_id]
        sid = scenario.scenario_id
        if old.inputs_digest is not None and scenario.inputs_digest != old.inputs_digest:
            found.append(
                LiveRegression(
                    sid,
                    f"{sid}: inputs changed since the live baseline ({old.inputs_digest} -> "
                    f"{scenario.inputs_digest}); its rates no longer measure the same thing: "
                    "re-record the live baseline deliberately",
                    "changed_inputs",
                )
            )
        lost = sorted(set(old.checks) - set(scenario.checks) - set(scenario.some_checks))
        if lost:
            shown = ", ".join(lost[:5]) + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
            found.append(
                LiveRegression(
                    sid,
                    f"{sid}: check(s) the live baseline had are no longer produced (lost_check: "
                    f"a weakened expectation is not a pass): {shown}",
                    "lost_check",
                )
            )
    return found


def live_metrics(scenarios: Sequence[ScenarioRepeats]) -> tuple[MetricRepeats, ...]:
    """Every metric pooled over the runs, then `scenario_pass`: what a live report shows."""
    return (*pooled_metrics(scenarios), scenario_pass_metric(scenarios))
