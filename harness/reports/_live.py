"""What the reports add for a live run: who answered, K, the statement that this measures the
model, pass@k and pass^k per scenario, each metric's rate with its Wilson 95% interval, and the
live gate (or the one reason it did not gate). One module, so each format's hook is one call.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

from tabulate import tabulate

from harness._repeat_values import LiveSummary, format_interval
from harness._results import SuiteResult
from harness.reports._common import exit_code, exit_meaning, html_text, one_line

TERMINAL_LISTED = 10  # scenarios named in the terminal; the rest are in the files
_METRIC_HEADERS = ["metric", "passed/total", "rate", "Wilson 95%"]


def metric_table_rows(summary: LiveSummary) -> list[list[str]]:
    return [
        [
            m.name,
            f"{m.passed}/{m.total}",
            "absent" if m.rate is None else f"{m.rate * 100:.1f}%",
            format_interval(m.interval),
        ]
        for m in summary.metrics
    ]


def gate_line(summary: LiveSummary) -> str:
    """One line: gated against which baseline and what came of it, or why not gated."""
    gate = summary.gate
    if gate is None:
        return f"NOT GATED: {summary.not_gated_because}"
    verdict = (
        f"FAILED: {len(gate.regressions)} regression(s)"
        if gate.regressed
        else "passed: no metric fell below the baseline's interval, nothing it had is missing"
    )
    missing = ""
    if gate.not_in_run:
        missing = f"; {len(gate.not_in_run)} baseline scenario(s) not in this run" + (
            " (left out by the selection, not gated)" if gate.partial else ""
        )
    return (
        f"live gate vs {gate.baseline_path} (K={gate.baseline_repeat}): {verdict}"
        + missing
        + (f"; {len(gate.not_in_baseline)} new, not gated" if gate.not_in_baseline else "")
        + (f"; {gate.partial}" if gate.partial else "")
        + (
            f"; the baseline was recorded for model {gate.other_model}, not {summary.model} "
            "(--allow-other-model)"
            if gate.other_model
            else ""
        )
    )


def counts(summary: LiveSummary) -> str:
    total = len(summary.scenarios)
    at_k = sum(s.pass_at_k for s in summary.scenarios)
    hat_k = sum(s.pass_hat_k for s in summary.scenarios)
    k = summary.repeat
    return f"{total} scenario(s) × {k} run(s): pass^{k} {hat_k}/{total} · pass@{k} {at_k}/{total}"


def skipped_line(summary: LiveSummary) -> str | None:
    if not summary.skipped_replay_only:
        return None
    return (
        f"{summary.skipped_replay_only} replay-only expectation(s) skipped in each run "
        "(they hold only for the scripted model)"
    )


def render_live_terminal(result: SuiteResult, report_dir: str | None) -> str:
    """Short: headline, statement, metric intervals, the scenarios short of pass^k (a few),
    gate, exit. Every failed check is in the report files, not here."""
    summary = result.live_run
    assert summary is not None
    lines = [
        f"Proctor live eval {one_line(result.run_id)} · model {one_line(summary.model)} @ "
        f"{one_line(summary.endpoint_host)} · K={summary.repeat}",
        one_line(summary.statement),
        "",
        tabulate(metric_table_rows(summary), headers=_METRIC_HEADERS, disable_numparse=True),
        "",
        counts(summary),
    ]
    short = [s for s in summary.scenarios if not s.pass_hat_k]
    for s in short[:TERMINAL_LISTED]:
        lines.append(f"  ✗ {one_line(s.scenario_id)}  passed {s.passes}/{s.runs} runs")
    if len(short) > TERMINAL_LISTED:
        lines.append(f"  ... and {len(short) - TERMINAL_LISTED} more (see the reports)")
    if (skipped := skipped_line(summary)) is not None:
        lines.append(skipped)
    gate = summary.gate
    if gate is not None:
        lines += [f"  ▼ {one_line(r.detail)}" for r in gate.regressions]
    lines.append(gate_line(summary))
    if report_dir is not None:
        runs = "r1/" if summary.repeat == 1 else f"r1/ .. r{summary.repeat}/"
        lines.append(f"reports: {report_dir} (each run's traces and reports in {runs})")
    lines.append(f"exit {exit_code(result)}: {exit_meaning(result)}")
    return "\n".join(lines) + "\n"


def live_json(summary: LiveSummary) -> dict[str, Any]:
    gate = summary.gate
    return {
        "model": summary.model,
        "endpoint_host": summary.endpoint_host,
        "repeat": summary.repeat,
        "statement": summary.statement,
        "skipped_replay_only_per_run": summary.skipped_replay_only,
        "runs": [f"r{i}" for i in range(1, summary.repeat + 1)],
        "scenarios": [
            {
                "id": s.scenario_id,
                "passes": s.passes,
                "runs": s.runs,
                "pass_at_k": s.pass_at_k,
                "pass_hat_k": s.pass_hat_k,
            }
            for s in summary.scenarios
        ],
        "metrics": [
            {
                "name": m.name,
                "passed": m.passed,
                "total": m.total,
                "rate": None if m.rate is None else round(m.rate, 6),
                "wilson_95": None if m.interval is None else [round(x, 6) for x in m.interval],
            }
            for m in summary.metrics
        ],
        "gate": None
        if gate is None
        else {
            "baseline": gate.baseline_path,
            "baseline_repeat": gate.baseline_repeat,
            "regressed": gate.regressed,
            "regressions": [
                {"kind": r.kind, "metric": r.metric, "detail": r.detail} for r in gate.regressions
            ],
            "partial": gate.partial,
            "other_model": gate.other_model,
            "compared": list(gate.compared),
            "not_in_run": list(gate.not_in_run),
            "not_in_baseline": list(gate.not_in_baseline),
        },
        "not_gated_because": summary.not_gated_because,
    }


def live_markdown(summary: LiveSummary, md_text: Callable[[str], str]) -> list[str]:
    out = [
        "",
        f"**Live run:** model `{md_text(summary.model)}` at `{md_text(summary.endpoint_host)}`, "
        f"K={summary.repeat}. {md_text(summary.statement)}",
        "",
        "### Repeats",
        "",
        tabulate(
            [[md_text(c) for c in row] for row in metric_table_rows(summary)],
            headers=_METRIC_HEADERS,
            tablefmt="github",
            disable_numparse=True,
        ),
        "",
        md_text(counts(summary)),
        "",
        tabulate(
            [
                [
                    md_text(s.scenario_id),
                    f"{s.passes}/{s.runs}",
                    _yes(s.pass_at_k),
                    _yes(s.pass_hat_k),
                ]
                for s in summary.scenarios
            ],
            headers=["scenario", "passes", f"pass@{summary.repeat}", f"pass^{summary.repeat}"],
            tablefmt="github",
            disable_numparse=True,
        ),
        "",
        md_text(gate_line(summary)),
    ]
    if (skipped := skipped_line(summary)) is not None:
        out += ["", md_text(skipped)]
    if summary.gate is not None:
        out += [f"- ▼ {md_text(r.detail)}" for r in summary.gate.regressions]
    return out


def live_html(summary: LiveSummary) -> list[str]:
    def row(cells: list[str], tag: str = "td") -> str:
        return "<tr>" + "".join(f"<{tag}>{html_text(c)}</{tag}>" for c in cells) + "</tr>"

    k = summary.repeat
    parts = [
        '<section id="live-run"><h2>Live run: repeats</h2>',
        f'<p class="live-statement">{html_text(summary.statement)}</p>',
        "<table>" + row(_METRIC_HEADERS, "th"),
        *(row(r) for r in metric_table_rows(summary)),
        "</table>",
        f"<p>{html_text(counts(summary))}</p>",
        "<table>" + row(["scenario", "passes", f"pass@{k}", f"pass^{k}"], "th"),
        *(
            row([s.scenario_id, f"{s.passes}/{s.runs}", _yes(s.pass_at_k), _yes(s.pass_hat_k)])
            for s in summary.scenarios
        ),
        "</table>",
        f'<p id="live-gate">{html_text(gate_line(summary))}</p>',
    ]
    if (skipped := skipped_line(summary)) is not None:
        parts.append(f"<p>{html_text(skipped)}</p>")
    if summary.gate is not None and summary.gate.regressions:
        parts.append(
            "<ul>"
            + "".join(f"<li>{html_text(r.detail)}</li>" for r in summary.gate.regressions)
            + "</ul>"
        )
    parts.append("</section>")
    return parts


def live_junit_properties(summary: LiveSummary) -> list[tuple[str, str]]:
    return [
        ("model", summary.model),
        ("endpoint_host", summary.endpoint_host),
        ("repeat", str(summary.repeat)),
        ("statement", summary.statement),
    ]


def live_junit_cases(summary: LiveSummary, xml_text: Callable[[str], str]) -> list[ET.Element]:
    """A testcase per scenario (failing unless pass^k) and one for the live gate."""
    k = summary.repeat
    cases = []
    for s in summary.scenarios:
        case = ET.Element("testcase", classname="proctor.live", name=xml_text(s.scenario_id))
        shown = f"passed {s.passes}/{s.runs} runs (pass@{k} {_yes(s.pass_at_k)}, pass^{k} " + (
            f"{_yes(s.pass_hat_k)})"
        )
        if not s.pass_hat_k:
            ET.SubElement(case, "failure", message=xml_text(shown), type="repeats")
        ET.SubElement(case, "system-out").text = xml_text(shown)
        cases.append(case)
    gate = ET.Element("testcase", classname="proctor.live", name="live-gate")
    if summary.gate is not None and summary.gate.regressed:
        failure = ET.SubElement(
            gate,
            "failure",
            message=f"{len(summary.gate.regressions)} regression(s)",
            type="regression",
        )
        failure.text = xml_text("\n".join(r.detail for r in summary.gate.regressions))
    elif summary.gate is None:
        ET.SubElement(gate, "skipped", message=xml_text(gate_line(summary)))
    cases.append(gate)
    return cases


def _yes(value: bool) -> str:
    return "yes" if value else "no"
