"""Recording a live baseline over the previous one: what it would lose, the diff, the history.

Pure. The same losses the live gate finds (a dropped scenario, a dropped check id, a metric
gone, a rate whose interval falls below), plus any lower rate at all: the gate tolerates noise
in a run, but lowering the bar every later run is held to is a decision, made with
--allow-regression and a reason that the file's history keeps. Changed inputs are not refused:
re-recording is how a changed scenario is accepted; the diff names them.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness._live_baseline import LiveBaseline, LiveHistoryRecord
from harness._live_gate import live_gate, live_metrics
from harness._repeat_values import MetricRepeats, ScenarioRepeats

_SUMMARY_REFUSALS = 5


def live_record_refusals(
    current: Sequence[ScenarioRepeats], previous: LiveBaseline | None, path: str
) -> list[str]:
    """Why recording `current` over `previous` needs --allow-regression (empty: it does not)."""
    if previous is None:
        return []
    gated = live_gate(current, previous, path)
    found = [r.detail for r in gated.regressions if r.kind != "changed_inputs"]
    flagged = {r.metric for r in gated.regressions}
    common = {s.scenario_id for s in current} & set(previous.scenarios)
    before = _by_name(live_metrics([s for s in previous.as_repeats() if s.scenario_id in common]))
    after = _by_name(live_metrics([s for s in current if s.scenario_id in common]))
    for name, old in before.items():
        new = after.get(name)
        if name in flagged or new is None or old.rate is None or new.rate is None:
            continue
        if new.passed * old.total < old.passed * new.total:  # exact: no float comparison
            found.append(
                f"{name}: {new.passed}/{new.total} ({new.rate * 100:.1f}%) is lower than the "
                f"previous {old.passed}/{old.total} ({old.rate * 100:.1f}%) over the same "
                "scenarios (perhaps noise, still a lower bar)"
            )
    return found


def live_history(
    previous: LiveBaseline | None,
    current: Sequence[ScenarioRepeats],
    *,
    model: str,
    repeat: int,
    reason: str,
    recorded_at: str,
    allow_regression: bool,
    refusals: Sequence[str],
) -> list[LiveHistoryRecord]:
    """The previous file's history (its one recording, for a file from before histories) and
    this recording's record."""
    old: list[LiveHistoryRecord] = []
    if previous is not None:
        old = list(previous.history) or [
            LiveHistoryRecord(
                reason=previous.reason,
                recorded_at=previous.recorded_at,
                model=previous.model,
                repeat=previous.repeat,
                summary=f"{len(previous.scenarios)} scenarios",
            )
        ]
    summary = f"{len(current)} scenarios, K={repeat}"
    if refusals:
        summary += "; lower than the previous: " + "; ".join(refusals[:_SUMMARY_REFUSALS])
        if len(refusals) > _SUMMARY_REFUSALS:
            summary += f"; and {len(refusals) - _SUMMARY_REFUSALS} more"
    record = LiveHistoryRecord(
        reason=reason.strip() or reason,
        recorded_at=recorded_at,
        model=model,
        repeat=repeat,
        allow_regression=allow_regression,
        summary=summary,
    )
    return [*old, record]


def live_baseline_diff(old: LiveBaseline | None, new: LiveBaseline) -> str:
    """Metric rates, scenarios, check ids and inputs that changed between two live baselines."""
    if old is None:
        checks = sum(len(s.checks) for s in new.scenarios.values())
        return f"new live baseline: {len(new.scenarios)} scenarios, {checks} check ids"
    lines: list[str] = []
    before = _by_name(live_metrics(old.as_repeats()))
    after = _by_name(live_metrics(new.as_repeats()))
    metric_lines = []
    for name in [*before, *(n for n in after if n not in before)]:
        was, now = before.get(name), after.get(name)
        shown = (_rate(was), _rate(now))
        if shown[0] != shown[1]:
            metric_lines.append(f"  {name}: {shown[0]} -> {shown[1]}")
    if metric_lines:
        lines += ["metrics:", *metric_lines]
    scenario_lines = [f"  + {sid}" for sid in sorted(set(new.scenarios) - set(old.scenarios))]
    scenario_lines += [f"  - {sid}" for sid in sorted(set(old.scenarios) - set(new.scenarios))]
    if scenario_lines:
        lines += ["scenarios:", *scenario_lines]
    check_lines: list[str] = []
    changed: list[str] = []
    for sid in sorted(set(old.scenarios) & set(new.scenarios)):
        was_ids, now_ids = set(old.scenarios[sid].checks), set(new.scenarios[sid].checks)
        check_lines += [f"  {sid}: + {c}" for c in sorted(now_ids - was_ids)]
        check_lines += [f"  {sid}: - {c}" for c in sorted(was_ids - now_ids)]
        if old.scenarios[sid].inputs_digest != new.scenarios[sid].inputs_digest:
            changed.append(f"  {sid}")
    if check_lines:
        lines += ["checks:", *check_lines]
    if changed:
        lines += ["inputs changed:", *changed]
    return "\n".join(lines) if lines else "no changes to scenarios, checks or inputs"


def _by_name(metrics: Sequence[MetricRepeats]) -> dict[str, MetricRepeats]:
    return {m.name: m for m in metrics}


def _rate(metric: MetricRepeats | None) -> str:
    if metric is None or metric.rate is None:
        return "not recorded"
    return f"{metric.passed}/{metric.total} ({metric.rate * 100:.1f}%)"
