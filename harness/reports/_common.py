"""What every report format derives from a `SuiteResult`: one reading, several renderings.

Headline, exit meaning, metric rows with baseline and delta, per-scenario summaries. Pure: no
I/O, no clock, so every format says the same thing about the same run.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import overload

from harness import _exit_codes
from harness._agentdojo_table import SuiteRow, agentdojo_table
from harness._check_store import StoredChecks
from harness._results import CheckResult, MetricResult, Regression, SuiteResult
from harness._trace import DETERMINISTIC_NOTICE, Trace
from harness._trace_store import StoredTraces, TraceFacts, provider_records

REPORT_VERSION = 1

EXIT_MEANINGS: dict[int, str] = {
    _exit_codes.OK: "clean",
    _exit_codes.CHECK_FAILED: "a scenario check failed; nothing gated regressed",
    _exit_codes.REGRESSED: "a gated metric regressed against the baseline",
}

# C0/C1 controls (ANSI escapes), line separators, bidi overrides ("trojan source") and lone
# surrogates (which cannot even be encoded as UTF-8).
_CONTROL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def escape_char(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def exit_code(result: SuiteResult) -> int:
    """The eval exit code this result stands for (`SuiteResult.exit_code`)."""
    return result.exit_code()


def exit_meaning(result: SuiteResult) -> str:
    """What the exit code stands for in this run: for 2, every cause that is present."""
    code = exit_code(result)
    gate = result.gate
    if result.live_regressed and (gate is None or not gate.fails(fail_on_drift=False)):
        return "the live gate failed against the live baseline"
    if code == _exit_codes.OK and result.live_gated and result.failed_checks:
        return (
            "the live gate passed; the failed repeats are the measurement, in the reports "
            f"({len(result.failed_checks)} failed check(s) over all runs)"
        )
    if code != _exit_codes.REGRESSED or gate is None:
        return EXIT_MEANINGS[code]
    causes: list[str] = []
    if gate.regressed:
        causes.append(EXIT_MEANINGS[code])
    changed = len(gate.unacknowledged_changes)
    if changed:
        causes.append(
            f"{changed} scenario(s) with changed inputs, not yet recorded "
            "(`proctor baseline record --accept-changed ID`)"
        )
    if result.fail_on_drift and gate.drift:
        causes.append(
            f"{len(gate.drift)} scenario(s) drifted with unchanged inputs (--fail-on-drift)"
        )
    return "; ".join(causes)


# What every report says once on a partial run (coverage needs the whole suite).
PARTIAL_COVERAGE = "policy coverage is not gated on a partial run; run the whole suite for it"


_AGENTDOJO_METRICS = frozenset({"task_utility", "utility_under_attack", "injection_containment"})


def agentdojo_rows(result: SuiteResult) -> tuple[SuiteRow, ...]:
    """The AgentDojo table of a run that had AgentDojo checks (read from its checks only then:
    other runs never pay for it)."""
    if not any(m.name in _AGENTDOJO_METRICS and m.total for m in result.metrics):
        return ()
    return agentdojo_table(result.checks)


def notice(result: SuiteResult) -> str | None:
    """The deterministic-run notice, verbatim, for any run not driven by a live provider."""
    return None if result.live else DETERMINISTIC_NOTICE


def provider_label(result: SuiteResult) -> str:
    """`name (model)` of each distinct provider in trace order; `none` for an empty suite."""
    seen: list[str] = []
    for record in provider_records(result.traces):
        label = f"{record['name']} ({record['model']})"
        if label not in seen:
            seen.append(label)
    return ", ".join(seen) if seen else "none"


def providers(result: SuiteResult) -> list[dict[str, object]]:
    return provider_records(result.traces)


def one_line(text: str) -> str:
    """Newlines folded and control characters shown as escapes: safe inside a row or a bullet."""
    text = text.replace("\r\n", "\n").replace("\n", " ⏎ ")
    return _CONTROL.sub(lambda m: escape_char(m.group()), text)


def clean_block(text: str) -> str:
    """Multi-line text with control characters (ANSI escapes, NUL) shown as escapes."""
    return _CONTROL.sub(lambda m: escape_char(m.group()), text.replace("\r\n", "\n"))


# What `html_text` changes: markup characters and control characters (`\r` among them).
_UNSAFE_IN_HTML = re.compile("[&<>\"']|" + _CONTROL.pattern)


def html_text(text: str) -> str:
    """`html.escape(clean_block(text), quote=True)`; text with nothing to change (most of a
    report's) is returned as it is, found by one regex search instead of six passes."""
    if _UNSAFE_IN_HTML.search(text) is None:
        return text
    return escape(clean_block(text), quote=True)


def format_rate(metric: MetricResult | None) -> str:
    """A percentage with one decimal; `absent` when there was nothing to count (never 100%)."""
    if metric is None or metric.rate is None:
        return "absent"
    return f"{metric.rate * 100:.1f}%"


def format_delta(delta: float | None) -> str:
    """Signed percentage points; blank when there is nothing to compare."""
    if delta is None:
        return ""
    points = delta * 100
    if round(points, 1) == 0:
        return "±0.0 pp"
    return f"{points:+.1f} pp"


@dataclass(frozen=True, slots=True)
class MetricRow:
    """One metric now, its baseline (if a baseline was loaded) and the rate change."""

    name: str
    current: MetricResult | None
    baseline: MetricResult | None
    has_baseline: bool

    @property
    def delta(self) -> float | None:
        if self.current is None or self.baseline is None:
            return None
        if self.current.rate is None or self.baseline.rate is None:
            return None
        return self.current.rate - self.baseline.rate

    @property
    def unmeasured(self) -> bool:
        """No checks now and none in the baseline: nothing to show. A metric the baseline
        measured and this run did not is not this: that is a regression to show."""
        now = self.current is None or self.current.absent
        before = self.baseline is None or self.baseline.absent
        return now and before

    def cells(self) -> list[str]:
        """metric | passed/total | rate | baseline | delta, as display strings."""
        counts = f"{self.current.passed}/{self.current.total}" if self.current else "-"
        baseline = ""
        if self.has_baseline:
            baseline = format_rate(self.baseline) if self.baseline else "not in baseline"
        return [self.name, counts, format_rate(self.current), baseline, format_delta(self.delta)]


METRIC_HEADERS = ["metric", "passed/total", "rate", "baseline", "delta"]


def metric_rows(result: SuiteResult) -> list[MetricRow]:
    """Current metrics in run order, then metrics only the baseline has (shown as absent now)."""
    baseline = result.baseline_metrics
    has_baseline = baseline is not None
    rows = [
        MetricRow(m.name, m, baseline.get(m.name) if baseline else None, has_baseline)
        for m in result.metrics
    ]
    current = {m.name for m in result.metrics}
    for name in sorted(baseline or {}):
        if name not in current:
            rows.append(MetricRow(name, None, (baseline or {})[name], has_baseline))
    return rows


@dataclass(frozen=True, slots=True)
class ScenarioSummary:
    """A scenario as the reports list it: its trace (if it ran) and its checks.

    The trace is read when asked for (from its file, for a run that streamed its traces), so a
    list of summaries does not hold every trace of a big suite.
    """

    id: str
    file: str | None
    load_trace: Callable[[], Trace | None] = field(repr=False, compare=False)
    checks: tuple[CheckResult, ...]
    load_facts: Callable[[], TraceFacts | None] = field(repr=False, compare=False)

    @property
    def trace(self) -> Trace | None:
        return self.load_trace()

    @property
    def facts(self) -> TraceFacts | None:
        """What the summary reports show of the trace, without reading it for a streamed run."""
        return self.load_facts()

    @property
    def failed(self) -> tuple[CheckResult, ...]:
        return tuple(c for c in self.checks if not c.passed)

    @property
    def passed_count(self) -> int:
        return sum(1 for c in self.checks if c.passed)


def trace_ids(result: SuiteResult) -> list[str]:
    """The traced scenario ids in run order, without loading a trace."""
    traces = result.traces
    if isinstance(traces, StoredTraces):
        return list(traces.ids)
    return [t.scenario_id for t in traces]


def trace_lookup(result: SuiteResult) -> Callable[[str], Trace | None]:
    """scenario id -> its trace: from its file for a streamed run, else from memory."""
    traces = result.traces
    if isinstance(traces, StoredTraces):
        return traces.get
    by_id = {t.scenario_id: t for t in traces}
    return by_id.get


def canonical_trace_lookup(result: SuiteResult) -> Callable[[str], bytes | None]:
    """scenario id -> its trace's canonical JSON bytes (None if it did not run): a streamed
    run's file as it is, neither parsed nor encoded again."""
    traces = result.traces
    if isinstance(traces, StoredTraces):
        return traces.canonical
    lookup = trace_lookup(result)

    def canonical(scenario_id: str) -> bytes | None:
        trace = lookup(scenario_id)
        return None if trace is None else trace.canonical()

    return canonical


def facts_lookup(result: SuiteResult) -> Callable[[str], TraceFacts | None]:
    """scenario id -> its trace's facts: as stored for a streamed run, else from memory."""
    traces = result.traces
    if isinstance(traces, StoredTraces):
        return traces.facts
    lookup = trace_lookup(result)

    def facts(scenario_id: str) -> TraceFacts | None:
        trace = lookup(scenario_id)
        return None if trace is None else TraceFacts.of(trace)

    return facts


def scenarios(result: SuiteResult) -> Sequence[ScenarioSummary]:
    """Scenarios in trace order, then any that have checks but no trace. A streamed run's
    come one at a time from its stored checks (each pass reads them again): never all held."""
    if isinstance(result.checks, StoredChecks) and isinstance(result.traces, StoredTraces):
        return _StreamedSummaries(result, result.checks, result.traces)
    order: dict[str, None] = dict.fromkeys(trace_ids(result))
    checks: dict[str, list[CheckResult]] = {}
    for check in result.checks:
        order.setdefault(check.scenario_id)
        checks.setdefault(check.scenario_id, []).append(check)
    return [_summary(result, sid, tuple(checks.get(sid, ()))) for sid in order]


def _summary(result: SuiteResult, sid: str, checks: tuple[CheckResult, ...]) -> ScenarioSummary:
    lookup = trace_lookup(result)
    file = result.scenario_files.get(sid)
    if not file:
        trace = lookup(sid)
        file = trace.scenario_file if trace else None
    return ScenarioSummary(
        sid,
        file or None,
        functools.partial(lookup, sid),
        checks,
        functools.partial(facts_lookup(result), sid),
    )


class _StreamedSummaries(Sequence[ScenarioSummary]):
    """A streamed run's summaries: its checks were stored a scenario's group per trace, in
    trace order, so the groups are the scenarios in report order."""

    def __init__(self, result: SuiteResult, checks: StoredChecks, traces: StoredTraces) -> None:
        self._result, self._checks, self._traces = result, checks, traces

    def __len__(self) -> int:
        return len(self._traces)

    def __iter__(self) -> Iterator[ScenarioSummary]:
        count = 0
        for sid, checks in self._checks.groups():
            if self._traces.position(sid) != count:
                raise ValueError(f"stored checks of {sid!r} are out of the traces' order")
            count += 1
            yield _summary(self._result, sid, checks)
        if count != len(self._traces):
            raise ValueError("stored checks do not cover every trace")

    @overload
    def __getitem__(self, index: int) -> ScenarioSummary: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[ScenarioSummary]: ...

    def __getitem__(self, index: int | slice) -> ScenarioSummary | Sequence[ScenarioSummary]:
        wanted = range(len(self))[index]
        if isinstance(wanted, range):
            return [s for n, s in enumerate(self) if n in wanted]
        return next(s for n, s in enumerate(self) if n == wanted)


def scenario_anchors(
    result: SuiteResult, summaries: Sequence[ScenarioSummary]
) -> Mapping[str, str]:
    """scenario id -> `scenario-N`, N its place in the report (from 1)."""
    if isinstance(summaries, _StreamedSummaries):
        return _Anchors(summaries._traces)
    return {s.id: f"scenario-{i}" for i, s in enumerate(summaries, start=1)}


class _Anchors(Mapping[str, str]):
    """A streamed run's anchors, from each trace's place in the run: nothing held per scenario."""

    def __init__(self, traces: StoredTraces) -> None:
        self._traces = traces

    def __getitem__(self, scenario_id: str) -> str:
        position = self._traces.position(scenario_id)
        if position is None:
            raise KeyError(scenario_id)
        return f"scenario-{position + 1}"

    def __iter__(self) -> Iterator[str]:
        return iter(self._traces.ids)

    def __len__(self) -> int:
        return len(self._traces)


def regression_subject(metric: str | None, scenario: str | None, check: str | None) -> str:
    """`metric` / `scenario` / `scenario › check`, whichever the regression names."""
    parts = [p for p in (metric, scenario, check) if p]
    return " › ".join(parts) if parts else "suite"


def _names(text: str, name: str) -> bool:
    """Whether `text` mentions `name` as a whole name (not inside a longer one)."""
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


def regression_text(r: Regression) -> str:
    """`subject: detail`, or just the detail when it already names every part of its subject
    (a metric, scenario or check printed twice reads like two things)."""
    parts = [p for p in (r.metric, r.scenario_id, r.check_id) if p]
    tokens = [token for p in parts for token in p.split()]
    if tokens and all(_names(r.detail, token) for token in tokens):
        return r.detail
    return f"{regression_subject(r.metric, r.scenario_id, r.check_id)}: {r.detail}"


def counts_line(result: SuiteResult) -> str:
    """The closing line every format ends with: scenarios, checks, regressions, exit code."""
    failed = len(result.failed_checks)
    passed = len(result.checks) - failed
    regressions = len(result.gate.regressions) if result.gate else 0
    changed = len(result.gate.input_changes) if result.gate else 0
    inputs = f"{changed} input change(s) · " if changed else ""
    code = exit_code(result)
    return (
        f"{len(scenarios(result))} scenario(s) · checks {passed} passed, {failed} failed · "
        f"{regressions} regression(s) · {inputs}exit {code} ({exit_meaning(result)})"
    )
