"""The terminal report: what `proctor eval` prints. Plain text, no colour codes.

Every string that came from a scenario or a trace passes through `one_line`/`clean_block`, so a
tool output carrying ANSI escapes cannot repaint the reader's terminal.
"""

from __future__ import annotations

from tabulate import tabulate

from harness._agentdojo_table import render_table
from harness._coverage import render_coverage
from harness._results import SuiteResult
from harness.reports._common import (
    METRIC_HEADERS,
    PARTIAL_COVERAGE,
    agentdojo_rows,
    clean_block,
    counts_line,
    metric_rows,
    notice,
    one_line,
    provider_label,
    regression_text,
)

_INDENT = "    "


def render_terminal(result: SuiteResult) -> str:
    """Headline (provider, determinism), metric table, failures, regressions, drift, counts."""
    lines = [_headline(result), ""]
    if result.selected is not None:  # a focused run says so before anything else
        lines[1:1] = [one_line(result.selected.describe()), f"({PARTIAL_COVERAGE})"]
    rows = [[one_line(cell) for cell in row.cells()] for row in metric_rows(result)]
    if rows:
        lines.append(
            tabulate(rows, headers=METRIC_HEADERS, tablefmt="simple", disable_numparse=True)
        )
    else:
        lines.append("no metrics")

    failed = result.failed_checks
    if failed:
        lines += ["", f"Failed checks ({len(failed)}):"]
        lines += [
            f"  ✗ {one_line(c.scenario_id)}  {one_line(c.id)}: {one_line(c.why)}" for c in failed
        ]

    gate = result.gate
    if gate is not None and gate.regressions:
        lines += ["", f"Regressions ({len(gate.regressions)}):"]
        for r in gate.regressions:
            lines.append(f"  ▼ {r.kind}  {one_line(regression_text(r))}")
    if gate is not None and gate.input_changes:
        count = len(gate.input_changes)
        lines += ["", f"Changed inputs ({count}): a different test under the same id"]
        for c in gate.input_changes:
            state = (
                f"acknowledged: {one_line(c.acknowledged)}"
                if c.acknowledged is not None
                else "not recorded: gated until `proctor baseline record --accept-changed "
                f"{one_line(c.scenario_id)}`"
            )
            old = c.old_digest or "not recorded"
            lines.append(f"  ≠ {one_line(c.scenario_id)}  inputs {old} → {c.new_digest}")
            lines.append(f"{_INDENT}({state})")
            lines += [_INDENT + line for line in clean_block(c.diff).splitlines()]
    if gate is not None and gate.drift:
        count = len(gate.drift)
        lines += ["", f"Drifted scenarios ({count}): behaviour drift, inputs unchanged"]
        for d in gate.drift:
            lines.append(f"  ~ {one_line(d.scenario_id)}  {d.old_digest} → {d.new_digest}")
            lines += [_INDENT + line for line in clean_block(d.diff).splitlines()]
    if gate is not None and gate.new_scenarios:
        lines += ["", f"New scenarios, not in the baseline ({len(gate.new_scenarios)}):"]
        lines += [f"  + {one_line(s)}" for s in gate.new_scenarios]

    if result.coverage and result.selected is None:  # partial: said once above, rules not listed
        lines += ["", *(one_line(line) for line in render_coverage(result.coverage))]
    table = render_table(agentdojo_rows(result), live=result.live)
    if table:
        lines += ["", *(one_line(line) for line in table)]
    lines += ["", counts_line(result)]
    return "\n".join(lines) + "\n"


def _headline(result: SuiteResult) -> str:
    kind = notice(result) or "live run"
    provider = one_line(provider_label(result))
    return f"Proctor eval {one_line(result.run_id)} · provider {provider} · {kind}"
