"""The regression gate: the current run against the recorded baseline.

Pure. A regression is a rate drop, an evidence shrink (fewer checks, even at 100%), a lost
per-scenario check or a lost scenario. Rates are compared as exact fractions of the stored
integers, never as floats. A scenario whose inputs changed (`harness._identity`) is a different
test under the same id: it gates until a baseline records it, whatever its checks say. Drift (a
changed trace digest with unchanged inputs) is behaviour drift, reported apart: it is not a
regression unless the CLI is asked to fail on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from governance import digest
from harness._identity import ScenarioInputs
from harness._metrics import METRICS, count_of, format_rate
from harness._results import Drift, GateResult, InputChange, MetricResult, Regression

if TYPE_CHECKING:
    from harness._baseline import Baseline

MAX_DIFF_LINES = 40
_MAX_VALUE_CHARS = 100


def gate(
    current_metrics: Iterable[MetricResult],
    current_inventory: Mapping[str, Sequence[str]],
    current_digests: Mapping[str, str],
    baseline: Baseline,
    *,
    current_traces: Mapping[str, Mapping[str, Any]] | None = None,
    baseline_traces: Mapping[str, Mapping[str, Any]] | None = None,
    current_coverage: Mapping[str, CoverageState] | None = None,
    current_inputs: Mapping[str, ScenarioInputs] | None = None,
    acknowledged: Mapping[tuple[str, str], str] | None = None,
) -> GateResult:
    """Regressions, input changes, drift and new scenarios of this run against `baseline`.

    With `current_coverage` and a baseline that records coverage, lost policy coverage is a
    regression too (see `coverage_regressions`). `acknowledged` maps (scenario id, inputs
    digest) to the reason a baseline history record accepted those inputs with: such a change
    is reported, not gated (see `--baseline-ref`).
    """
    now = {m.name: m for m in current_metrics}
    regressions: list[Regression] = []
    for name in _metric_order(baseline.metrics):
        then = baseline.metrics[name]
        regressions += _metric_regressions(name, then.passed, then.total, now.get(name))

    lost_scenarios: list[Regression] = []
    lost_checks: list[Regression] = []
    for scenario_id, record in sorted(baseline.scenarios.items()):
        current = current_inventory.get(scenario_id)
        if current is None:
            lost_scenarios.append(
                Regression(
                    "lost_scenario",
                    f"scenario {scenario_id} ({count_of(len(record.checks), 'check')} in the "
                    "baseline) is missing from this run",
                    scenario_id=scenario_id,
                )
            )
            continue
        for check_id in sorted(set(record.checks) - set(current)):
            lost_checks.append(
                Regression(
                    "lost_check",
                    f"scenario {scenario_id} lost check {check_id}: the baseline has it, "
                    "this run does not produce it",
                    scenario_id=scenario_id,
                    check_id=check_id,
                )
            )

    changes = input_changes(baseline, current_inputs or {}, acknowledged or {})
    changed = {c.scenario_id for c in changes}
    drift: list[Drift] = []
    for scenario_id, record in sorted(baseline.scenarios.items()):
        new_digest = current_digests.get(scenario_id)
        if new_digest is None or new_digest == record.trace_digest or scenario_id in changed:
            continue
        old_trace = (baseline_traces or {}).get(scenario_id)
        new_trace = (current_traces or {}).get(scenario_id)
        diff = _drift_text(record.trace_digest, new_digest, old_trace, new_trace)
        drift.append(Drift(scenario_id, record.trace_digest, new_digest, diff))

    known = set(baseline.scenarios)
    new_scenarios = sorted((set(current_inventory) | set(current_digests)) - known)
    lost_coverage: list[Regression] = []
    if current_coverage is not None and baseline.coverage is not None:
        recorded = {
            name: CoverageState(tuple(r.covered), tuple(r.uncovered))
            for name, r in baseline.coverage.items()
        }
        lost_coverage = coverage_regressions(current_coverage, recorded)
    return GateResult(
        regressions=tuple(regressions + lost_scenarios + lost_checks + lost_coverage),
        drift=tuple(drift),
        new_scenarios=tuple(new_scenarios),
        input_changes=tuple(changes),
    )


@dataclass(frozen=True, slots=True)
class CoverageState:
    """The covered and uncovered items (`rule:<id>`, `budget:<id>`) of one policy file."""

    covered: tuple[str, ...]
    uncovered: tuple[str, ...]


def coverage_regressions(
    current: Mapping[str, CoverageState], baseline: Mapping[str, CoverageState]
) -> list[Regression]:
    """Lost coverage: a covered item that no longer is (weakened, disabled or deleted, or its
    policy file no longer used by any scenario), and an uncovered item the baseline did not
    accept as uncovered (a rule or budget added that no scenario exercises)."""
    out: list[Regression] = []
    in_scope = ", ".join(sorted(current)) or "none"
    for name in sorted(set(current) | set(baseline)):
        then = baseline.get(name, CoverageState((), ()))
        now = current.get(name)
        if now is None:
            for item in then.covered:
                out.append(
                    Regression(
                        "lost_coverage",
                        f"{item} of {name} was covered, but no scenario runs with {name} any "
                        f"more (policy files in scope: {in_scope})",
                        check_id=f"{name} {item}",
                    )
                )
            continue
        for item in sorted(set(then.covered) - set(now.covered)):
            gone = "is gone from the policy" if item not in now.uncovered else "is not any more"
            out.append(
                Regression(
                    "lost_coverage",
                    f"{item} of {name} was covered by the suite and {gone}: a weakened, "
                    "disabled or deleted rule or budget, or a scenario that stopped exercising it",
                    check_id=f"{name} {item}",
                )
            )
        for item in sorted(set(now.uncovered) - set(then.uncovered) - set(then.covered)):
            out.append(
                Regression(
                    "lost_coverage",
                    f"{item} of {name} is new and no scenario covers it: add a scenario that "
                    "it decides, or record the baseline to accept it as uncovered",
                    check_id=f"{name} {item}",
                )
            )
    return out


def input_changes(
    baseline: Baseline,
    current: Mapping[str, ScenarioInputs],
    acknowledged: Mapping[tuple[str, str], str],
) -> list[InputChange]:
    """Scenarios the baseline knows whose inputs are not the ones it recorded, by id.

    A baseline scenario without recorded inputs (recorded before they were tracked) counts as
    changed: what it was cannot be shown, so it cannot be vouched for.
    """
    found: list[InputChange] = []
    for scenario_id, record in sorted(baseline.scenarios.items()):
        now = current.get(scenario_id)
        if now is None or now.digest == record.inputs_digest:
            continue
        if record.inputs_digest is None or record.inputs is None:
            diff = "inputs not recorded in the baseline (recorded before inputs were tracked)"
        else:
            lines = trace_diff_lines(record.inputs, now.shown)
            diff = "\n".join(lines) if lines else "a redacted value changed"
        found.append(
            InputChange(
                scenario_id,
                record.inputs_digest,
                now.digest,
                diff,
                acknowledged=acknowledged.get((scenario_id, now.digest)),
            )
        )
    return found


def _metric_order(names: Iterable[str]) -> list[str]:
    """Known metrics in their fixed order, then any others (e.g. a since-renamed one) sorted."""
    present = set(names)
    return [m for m in METRICS if m in present] + sorted(present - set(METRICS))


def _metric_regressions(
    name: str, base_passed: int, base_total: int, current: MetricResult | None
) -> list[Regression]:
    if base_total == 0:
        return []  # absent in the baseline: nothing to lose
    then = format_rate(base_passed, base_total)
    if current is None or current.total == 0:
        return [
            Regression(
                "rate_drop",
                f"{name}: absent in this run (no checks), baseline {then}; absent is not 100%",
                metric=name,
            ),
            Regression(
                "evidence_shrink",
                f"{name}: evidence shrank from {count_of(base_total, 'check')} to none",
                metric=name,
            ),
        ]
    found: list[Regression] = []
    now = format_rate(current.passed, current.total)
    # passed/total < base_passed/base_total, compared exactly on integers
    if current.passed * base_total < base_passed * current.total:
        found.append(
            Regression("rate_drop", f"{name}: rate fell from {then} to {now}", metric=name)
        )
    if current.total < base_total:
        found.append(
            Regression(
                "evidence_shrink",
                f"{name}: evidence shrank from {count_of(base_total, 'check')} to {current.total} "
                f"(baseline {then}, now {now})",
                metric=name,
            )
        )
    return found


# -- drift ----------------------------------------------------------------------------------


def _drift_text(
    old_digest: str,
    new_digest: str,
    old_trace: Mapping[str, Any] | None,
    new_trace: Mapping[str, Any] | None,
) -> str:
    head = f"trace digest changed: {old_digest} -> {new_digest}"
    if old_trace is None or new_trace is None:
        return f"{head} (no stored traces to compare)"
    if digest(dict(old_trace)) != old_digest:
        return f"{head} (the stored baseline trace does not match the baseline digest; re-record)"
    lines = trace_diff_lines(old_trace, new_trace)
    if not lines:
        return head
    return "\n".join([head, *lines])


def trace_diff_lines(
    old: Mapping[str, Any], new: Mapping[str, Any], *, limit: int = MAX_DIFF_LINES
) -> list[str]:
    """`spans[3].outcome: 'blocked' -> 'executed'`: one line per changed, added or removed field."""
    # deepdiff (with numpy under it) costs ~0.4 s and ~40 MB to import: only a drifted
    # scenario's diff pays for it, never a run without one.
    from deepdiff import DeepDiff
    from deepdiff.helper import notpresent

    tree = DeepDiff(dict(old), dict(new), view="tree")
    changes: list[tuple[tuple[tuple[int, int, str], ...], str]] = []
    for levels in tree.values():
        for level in levels:
            path = level.path(output_format="list")
            where = _render_path(path) or "(root)"
            if level.t1 is notpresent:
                text = f"{where}: added {_value(level.t2)}"
            elif level.t2 is notpresent:
                text = f"{where}: removed {_value(level.t1)}"
            else:
                text = f"{where}: {_value(level.t1)} -> {_value(level.t2)}"
            changes.append((_path_key(path), text))
    changes.sort()
    lines = [text for _, text in changes[:limit]]
    if len(changes) > limit:
        lines.append(f"... and {len(changes) - limit} more changes")
    return lines


def _render_path(path: Sequence[Any]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and part.isidentifier():
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


def _path_key(path: Sequence[Any]) -> tuple[tuple[int, int, str], ...]:
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in path)


def _value(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 3] + "..."
