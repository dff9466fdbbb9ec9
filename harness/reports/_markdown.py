"""`summary.md`: sized for a pull-request comment and `$GITHUB_STEP_SUMMARY`.

GitHub renders some raw HTML in Markdown, so text from scenarios is entity-escaped and folded to
one line; drift diffs go in fenced blocks (longer fence than any backtick run inside). Long lists
end in "... and N more" and the whole document stays under `MAX_BYTES`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from tabulate import tabulate

from harness._agentdojo_table import render_table
from harness._results import SuiteResult
from harness.reports._common import (
    METRIC_HEADERS,
    PARTIAL_COVERAGE,
    agentdojo_rows,
    clean_block,
    exit_code,
    exit_meaning,
    metric_rows,
    notice,
    one_line,
    provider_label,
    regression_text,
    scenarios,
)
from harness.reports._live import counts as live_counts
from harness.reports._live import live_markdown

MAX_BYTES = 60_000
_LIST_LIMIT = 50
_ITEM_LIMIT = 600
_DIFF_LIMIT = 4_000
_RESERVE = 600  # kept back for the closing lines and the "... and N more" notes
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md_text(text: str) -> str:
    """One line, HTML entities escaped, Markdown emphasis/link/table characters backslashed."""
    text = one_line(text)
    if len(text) > _ITEM_LIMIT:
        text = text[:_ITEM_LIMIT] + f" … ({len(text) - _ITEM_LIMIT} more chars)"
    return _MD_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))


def render_markdown(result: SuiteResult) -> str:
    code = exit_code(result)
    icon = "✅" if code == 0 else "❌"
    head = [
        f"## {icon} Proctor eval: {exit_meaning(result)} (exit {code})",
        "",
        f"Run `{_code_span(result.run_id)}` · provider {md_text(provider_label(result))}"
        + (" · live run" if result.live else ""),
    ]
    text = notice(result)
    if text is not None:
        head += ["", f"> ⚠️ **{text}**"]
    head += _partial_lines(result)

    if result.live_run is not None:
        head += live_markdown(result.live_run, md_text)
    all_rows = metric_rows(result)
    rows = [[md_text(cell) for cell in row.cells()] for row in all_rows if not row.unmeasured]
    head += ["", "### Metrics", ""]
    head.append(
        tabulate(rows, headers=METRIC_HEADERS, tablefmt="github", disable_numparse=True)
        if rows
        else "_no metrics_"
    )
    unmeasured = [row.name for row in all_rows if row.unmeasured]
    if unmeasured:
        names = ", ".join(f"`{_code_span(name)}`" for name in unmeasured)
        head += ["", f"_Not measured (no checks in this run or the baseline): {names}_"]
    table = render_table(agentdojo_rows(result), live=result.live)
    if table:  # the pipe table's cells are the table's own numbers and ids: nothing to escape
        head += ["", "### AgentDojo", "", *table]
    doc = _Budget(MAX_BYTES - _RESERVE)
    doc.add("\n".join(head))

    failed = result.failed_checks
    if failed:
        doc.section(
            f"### Failed checks ({len(failed)})",
            [
                f"- `{_code_span(c.scenario_id)}` · `{_code_span(c.id)}`: {md_text(c.why)}"
                for c in failed
            ],
            share=0.4,
        )
    gate = result.gate
    if gate is not None and gate.regressions:
        doc.section(
            f"### Regressions ({len(gate.regressions)})",
            [f"- **{r.kind}** {md_text(regression_text(r))}" for r in gate.regressions],
            share=0.5,
        )
    if gate is not None and gate.input_changes:
        doc.section(
            f"### Changed inputs ({len(gate.input_changes)}): a different test under the same id",
            [
                _details(c.scenario_id, c.old_digest or "not recorded", c.new_digest, c.diff)
                for c in gate.input_changes
            ],
            separator="\n\n",
            share=0.8,
        )
    if gate is not None and gate.drift:
        doc.section(
            f"### Drifted scenarios ({len(gate.drift)}): behaviour drift, inputs unchanged",
            [_details(d.scenario_id, d.old_digest, d.new_digest, d.diff) for d in gate.drift],
            separator="\n\n",
            share=0.8,
        )
    if gate is not None and gate.new_scenarios:
        doc.section(
            f"### New scenarios ({len(gate.new_scenarios)})",
            [f"- `{_code_span(s)}`" for s in gate.new_scenarios],
        )

    if result.live_run is not None:
        return doc.text() + "\n\n" + md_text(live_counts(result.live_run)) + "\n"
    failing = [s for s in scenarios(result) if s.failed]
    total = len(scenarios(result))
    closing = f"{total - len(failing)}/{total} scenario(s) passed all checks."
    return doc.text() + "\n\n" + closing + "\n"


# -- a partial run (--id, -k, --tag, --limit) ---------------------------------------------------
def _partial_lines(result: SuiteResult) -> list[str]:
    """A focused run says so: its selectors and how many of the suite's scenarios it ran."""
    chosen = result.selected
    if chosen is None:
        return []
    return ["", f"> ℹ️ **{md_text(chosen.describe())}** ({md_text(PARTIAL_COVERAGE)})"]


# -- end of a partial run -------------------------------------------------------------------------


def _code_span(text: str) -> str:
    """Text for inside single backticks: one line, no backticks to break out with."""
    return one_line(text).replace("`", "ˋ")


def _details(scenario_id: str, old: str, new: str, diff: str) -> str:
    body = clean_block(diff)
    if len(body) > _DIFF_LIMIT:
        body = body[:_DIFF_LIMIT] + f"\n... diff truncated ({len(diff) - _DIFF_LIMIT} more chars)"
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return (
        f"<details><summary><code>{html.escape(one_line(scenario_id))}</code> "
        f"{md_text(old)} → {md_text(new)}</summary>\n\n"
        f"{fence}diff\n{body}\n{fence}\n\n</details>"
    )


class _Budget:
    """Appends blocks while they fit in `limit` bytes; lists end with "... and N more"."""

    def __init__(self, limit: int) -> None:
        self._parts: list[str] = []
        self._used = 0
        self._limit = limit

    def add(self, block: str) -> bool:
        size = len(block.encode("utf-8")) + 2
        if self._used + size > self._limit:
            return False
        self._parts.append(block)
        self._used += size
        return True

    def section(
        self, title: str, items: Sequence[str], *, separator: str = "\n", share: float = 1.0
    ) -> None:
        """Title and as many items as fit in `share` of the remaining bytes, so one long list
        cannot crowd out the sections after it."""
        if not self.add(title):
            return
        limit = self._used + int((self._limit - self._used) * share)
        shown: list[str] = []
        for item in items[:_LIST_LIMIT]:
            if self._used + len(item.encode("utf-8")) + len(separator) + 2 > limit:
                break
            shown.append(item)
            self._used += len(item.encode("utf-8")) + len(separator)
        block = separator.join(shown)
        if len(shown) < len(items):
            block += f"{separator if shown else ''}... and {len(items) - len(shown)} more"
        self._parts.append(block)
        self._used += 2

    def text(self) -> str:
        return "\n\n".join(self._parts)
