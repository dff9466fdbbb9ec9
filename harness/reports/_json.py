"""`report.json`: the machine-readable report. Its shape is a contract; bump `version` to change it.

Shape (version 1; keys sorted, two-space indent, UTF-8; rates are fractions in [0, 1] or null):

    version          int, REPORT_VERSION
    run_id           str
    live             bool, true when any scenario ran against a live provider
    deterministic    bool, not live
    notice           str | null, "deterministic workflow run — NOT a model-quality measurement"
    providers        [{name, model, live}], distinct, in trace order
    exit_code        int, 0 clean / 1 check failed / 2 regressed or inputs changed
    exit_meaning     str, every cause of the exit code
    baselined        bool, whether a baseline was compared against
    selection        {partial, selectors: [str], selected, of, note} | null: a focused run
                     (`--id`, `-k`, `--tag`, `--limit`), gated only on what it selected
    metrics          [{name, passed, total, rate, absent,
                       baseline: {passed, total, rate, absent} | null, delta: float | null}]
    checks           {total, passed, failed, results: [{scenario_id, id, kind, passed, why}]}
    failures         [{scenario_id, id, kind, why}], the failed checks
    regressions      [{kind, detail, metric, scenario_id, check_id}]
    drift            [{scenario_id, old_digest, new_digest, diff}], behaviour drift (same inputs)
    new_scenarios    [str]
    input_changes    [{scenario_id, old_digest, new_digest, diff, acknowledged}], scenarios whose
                     inputs differ from the baseline's; `acknowledged` (a history reason) or null
    live_run         null for replay; for a live run {model, endpoint_host, repeat, statement,
                       skipped_replay_only_per_run, runs: ["r1", ...], scenarios: [{id, passes,
                       runs, pass_at_k, pass_hat_k}], metrics: [{name, passed, total, rate,
                       wilson_95: [low, high] | null}], gate: {..., regressions: [{kind, metric,
                       detail}], partial, other_model} | null, not_gated_because}
    scenarios        [{id, file, ran, status, termination, digest, trace, tags, turns,
                       checks_passed, checks_failed, tool_calls: {outcome: count}}]
                     `trace` is the path of the trace file relative to the report directory.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from harness._results import CheckResult, MetricResult, SuiteResult
from harness.reports._common import (
    REPORT_VERSION,
    ScenarioSummary,
    agentdojo_rows,
    exit_code,
    exit_meaning,
    metric_rows,
    notice,
    providers,
    scenarios,
)
from harness.reports._json_stream import Lazy, json_chunks
from harness.reports._live import live_json


def report_dict(result: SuiteResult, trace_paths: Mapping[str, str]) -> dict[str, Any]:
    """The report as plain JSON values; `trace_paths` maps scenario id to its trace file."""
    report: dict[str, Any] = _plain(_lazy_report(result, trace_paths))
    return report


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, Lazy):
        return [_plain(v) for v in value]
    return value


def _lazy_report(result: SuiteResult, trace_paths: Mapping[str, str]) -> dict[str, Any]:
    """The report, its two long lists (every check, every scenario) produced when written."""
    gate = result.gate
    failed = result.failed_checks
    code = exit_code(result)
    table = agentdojo_rows(result)
    extra = {"agentdojo": [row.as_json() for row in table]} if table else {}
    return {
        **extra,
        "version": REPORT_VERSION,
        "run_id": result.run_id,
        "live": result.live,
        "deterministic": not result.live,
        "notice": notice(result),
        "providers": providers(result),
        "exit_code": code,
        "exit_meaning": exit_meaning(result),
        "baselined": result.baseline_metrics is not None,
        "selection": _selection(result),
        "metrics": [
            {
                **_metric(row.current, row.name),
                "baseline": _metric(row.baseline, row.name) if row.baseline else None,
                "delta": None if row.delta is None else round(row.delta, 6),
            }
            for row in metric_rows(result)
        ],
        "checks": {
            "total": len(result.checks),
            "passed": len(result.checks) - len(failed),
            "failed": len(failed),
            "results": Lazy(lambda: (_check(c) | {"passed": c.passed} for c in result.checks)),
        },
        "failures": [_check(c) for c in failed],
        "regressions": [
            {
                "kind": r.kind,
                "detail": r.detail,
                "metric": r.metric,
                "scenario_id": r.scenario_id,
                "check_id": r.check_id,
            }
            for r in (gate.regressions if gate else ())
        ],
        "drift": [
            {
                "scenario_id": d.scenario_id,
                "old_digest": d.old_digest,
                "new_digest": d.new_digest,
                "diff": d.diff,
            }
            for d in (gate.drift if gate else ())
        ],
        "new_scenarios": list(gate.new_scenarios) if gate else [],
        "input_changes": [
            {
                "scenario_id": c.scenario_id,
                "old_digest": c.old_digest,
                "new_digest": c.new_digest,
                "diff": c.diff,
                "acknowledged": c.acknowledged,
            }
            for c in (gate.input_changes if gate else ())
        ],
        "live_run": None if result.live_run is None else live_json(result.live_run),
        # Each scenario's entry reads its trace when written: never all traces at once.
        "scenarios": Lazy(lambda: (_scenario(s, trace_paths) for s in scenarios(result))),
    }


def render_json(result: SuiteResult, trace_paths: Mapping[str, str]) -> str:
    return "".join(json_report_chunks(result, trace_paths))


def json_report_chunks(result: SuiteResult, trace_paths: Mapping[str, str]) -> Iterator[str]:
    """report.json in pieces (sorted keys, indent 2), for writing a big suite's report."""
    return json_chunks(_lazy_report(result, trace_paths))


def _selection(result: SuiteResult) -> dict[str, Any] | None:
    chosen = result.selected
    if chosen is None:
        return None
    return {
        "partial": True,
        "selectors": list(chosen.flags),
        "selected": len(chosen.ids),
        "of": chosen.total,
        "note": chosen.describe(),
    }


def _metric(metric: MetricResult | None, name: str) -> dict[str, Any]:
    if metric is None:  # only the baseline has it: absent now
        return {"name": name, "passed": 0, "total": 0, "rate": None, "absent": True}
    rate = metric.rate
    return {
        "name": metric.name,
        "passed": metric.passed,
        "total": metric.total,
        "rate": None if rate is None else round(rate, 6),
        "absent": metric.absent,
    }


def _check(check: CheckResult) -> dict[str, Any]:
    return {"scenario_id": check.scenario_id, "id": check.id, "kind": check.kind, "why": check.why}


def _scenario(summary: ScenarioSummary, trace_paths: Mapping[str, str]) -> dict[str, Any]:
    facts = summary.facts
    return {
        "id": summary.id,
        "file": summary.file,
        "ran": facts is not None,
        "status": facts.status if facts else None,
        "termination": facts.termination if facts else None,
        "digest": facts.digest if facts else None,
        "trace": trace_paths.get(summary.id),
        "tags": list(facts.tags) if facts else [],
        "turns": facts.turns if facts else 0,
        "checks_passed": summary.passed_count,
        "checks_failed": len(summary.failed),
        "tool_calls": dict(facts.tool_outcomes) if facts else {},
    }
