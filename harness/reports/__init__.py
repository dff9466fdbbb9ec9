"""Eval reports: terminal text, report.json, junit.xml, summary.md and a self-contained report.html.

Every format is rendered from one `SuiteResult`; a non-live run says in its own text that it is
a deterministic workflow run and NOT a model-quality measurement.
"""

from __future__ import annotations

from harness.reports._common import REPORT_VERSION, exit_code, exit_meaning
from harness.reports._html import render_html
from harness.reports._json import render_json, report_dict
from harness.reports._junit import render_junit
from harness.reports._markdown import render_markdown
from harness.reports._terminal import render_terminal
from harness.reports._write import write_reports

__all__ = [
    "REPORT_VERSION",
    "exit_code",
    "exit_meaning",
    "render_html",
    "render_json",
    "render_junit",
    "render_markdown",
    "render_terminal",
    "report_dict",
    "write_reports",
]
