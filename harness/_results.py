"""Value types for scoring a suite: checks, metrics, regressions, drift, the suite result.

Plain frozen dataclasses shared by checks, metrics, gate and reports; no I/O here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from harness import _exit_codes as codes
from harness._coverage import PolicyCoverage
from harness._select import Selected
from harness._trace import Trace
from harness._trace_store import StoredTraces

if TYPE_CHECKING:
    from harness._repeat_values import LiveSummary


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One expectation item, judged against one trace. `id` is stable: `must_execute:fs.read`."""

    scenario_id: str
    id: str
    kind: str
    passed: bool
    why: str


@dataclass(frozen=True, slots=True)
class MetricResult:
    """passed / total over the metric's own checks. No checks at all: absent, never 100%."""

    name: str
    passed: int
    total: int

    @property
    def absent(self) -> bool:
        return self.total == 0

    @property
    def rate(self) -> float | None:
        return None if self.total == 0 else self.passed / self.total


RegressionKind = Literal[
    "rate_drop", "evidence_shrink", "lost_check", "lost_scenario", "lost_coverage"
]


@dataclass(frozen=True, slots=True)
class Regression:
    kind: RegressionKind
    detail: str
    metric: str | None = None
    scenario_id: str | None = None
    check_id: str | None = None


@dataclass(frozen=True, slots=True)
class Drift:
    """A scenario whose trace digest changed, with a readable diff of what changed."""

    scenario_id: str
    old_digest: str
    new_digest: str
    diff: str


@dataclass(frozen=True, slots=True)
class InputChange:
    """A scenario whose inputs differ from the baseline's: a different test under the same id.

    `acknowledged` is the reason of the baseline history record that accepted exactly these
    inputs (only with `--baseline-ref`: the pull request's own baseline acknowledges them);
    an unacknowledged change gates (exit 2).
    """

    scenario_id: str
    old_digest: str | None
    new_digest: str
    diff: str
    acknowledged: str | None = None


@dataclass(frozen=True, slots=True)
class GateResult:
    regressions: tuple[Regression, ...] = ()
    drift: tuple[Drift, ...] = ()  # behaviour drift: the trace changed, the inputs did not
    new_scenarios: tuple[str, ...] = ()
    input_changes: tuple[InputChange, ...] = ()

    @property
    def regressed(self) -> bool:
        return bool(self.regressions)

    @property
    def unacknowledged_changes(self) -> tuple[InputChange, ...]:
        return tuple(c for c in self.input_changes if c.acknowledged is None)

    def fails(self, *, fail_on_drift: bool) -> bool:
        """Exit 2: a regression, an unacknowledged input change, or drift when asked."""
        return (
            self.regressed
            or bool(self.unacknowledged_changes)
            or (fail_on_drift and bool(self.drift))
        )


@dataclass(frozen=True, slots=True)
class SuiteResult:
    """Everything a report needs about one suite run."""

    run_id: str
    traces: Sequence[Trace]  # a StoredTraces (read from files one at a time) for a streamed run
    checks: Sequence[CheckResult]  # a StoredChecks (on disk, by scenario) for a streamed run
    metrics: tuple[MetricResult, ...]
    baseline_metrics: Mapping[str, MetricResult] | None = None
    gate: GateResult | None = None
    scenario_files: Mapping[str, str] = field(default_factory=dict)
    fail_on_drift: bool = False  # drift counts as a regression (`--fail-on-drift`)
    coverage: tuple[PolicyCoverage, ...] = ()  # per policy file in scope
    selected: Selected | None = None  # a focused run: its selectors, how many of how many
    # A live run's repeat statistics and live gate (harness._live_gate); None for replay.
    live_run: LiveSummary | None = None

    @property
    def live_regressed(self) -> bool:
        return bool(self.live_run and self.live_run.gate and self.live_run.gate.regressed)

    @property
    def live_gated(self) -> bool:
        """A live run compared with a live baseline: its gate, not its checks, sets the exit."""
        return bool(self.live_run and self.live_run.gate)

    @property
    def live(self) -> bool:
        if self.live_run is not None:
            return True
        if isinstance(self.traces, StoredTraces):
            return self.traces.live  # known as they were stored: no trace is read again
        return any(t.provider.live for t in self.traces)

    @property
    def failed_checks(self) -> tuple[CheckResult, ...]:
        failed = getattr(self.checks, "failed", None)  # StoredChecks keeps them as they come
        if failed is not None:
            return tuple(failed)
        return tuple(c for c in self.checks if not c.passed)

    def exit_code(self, *, fail_on_drift: bool | None = None) -> int:
        """DESIGN.md's contract: 2 regressed, inputs changed (or drifted, when asked: default
        this run's `fail_on_drift`), 1 a check failed, 0 clean. A live run with a live
        baseline: its gate decides (2 or 0); its failed repeats are the measurement."""
        drift = self.fail_on_drift if fail_on_drift is None else fail_on_drift
        if self.gate is not None and self.gate.fails(fail_on_drift=drift):
            return codes.REGRESSED
        if self.live_regressed:
            return codes.REGRESSED
        if self.live_gated:
            return codes.OK
        if self.failed_checks:
            return codes.CHECK_FAILED
        return codes.OK
