"""The Evaluations page in Chromium: a run `proctor run --report-dir` wrote under the console's
reports dir is listed, says it is a replay (not a model-quality measurement), and opens its own
report.html, whose inline style and script run under their hashes with no CSP violation."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import ConsoleMessage, Page, expect

from tests.browser._console_process import ConsoleProcess

pytestmark = pytest.mark.browser

PAGE = "/evaluations"

Login = Callable[[Page, ConsoleProcess, str], None]


ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def reports_dir(tmp_path: Path) -> Path:
    """One `proctor run` of a few scenarios, written under a reports dir of its own."""
    reports = tmp_path / "reports"
    subprocess.run(
        [
            sys.executable, "-m", "harness", "run", "--scenarios", str(ROOT / "scenarios"),
            "--baseline", str(ROOT / "baselines" / "baseline.json"),
            "--limit", "4", "--report-dir", str(reports / "run-replay"),
        ],
        check=True, capture_output=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    return reports


def _csp_messages(page: Page) -> list[str]:
    seen: list[str] = []

    def record(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text:
            seen.append(message.text)

    page.on("console", record)
    return seen


def test_the_evaluations_page_lists_a_run_and_opens_its_trace_viewer_within_its_csp(
    page: Page,
    start_console: Callable[..., ConsoleProcess],
    reports_dir: Path,
    login: Login,
    screenshot: Callable[[Page, str], Path],
) -> None:
    console = start_console("--reports", str(reports_dir))
    violations = _csp_messages(page)
    login(page, console, "ann")
    page.goto(console.url(PAGE))
    page.goto(console.url("/evaluations"))
    row = page.locator('tr[data-run="run-replay"]')
    expect(row).to_contain_text("replay")
    expect(row).to_contain_text("exit 0")
    screenshot(page, "evaluations")

    row.get_by_role("link", name="run-replay").click()
    expect(page.locator("#notice")).to_contain_text("NOT a model-quality measurement")
    expect(page.locator("#scenarios tbody tr")).to_have_count(4)
    page.locator("#check-traces").click()
    expect(page.locator("#trace-check")).to_contain_text("Stored traces verify")
    screenshot(page, "evaluation")

    with page.context.expect_page() as opened:
        page.locator("#trace-viewer").click()
    viewer = opened.value
    viewer_violations = _csp_messages(viewer)
    viewer.wait_for_load_state("load")
    viewer.reload()  # listening from the first byte: reload with the listener attached
    expect(viewer.locator("#notice")).to_contain_text("NOT a model-quality measurement")
    # Its own script runs (Expand all opens every scenario) and its own style applies.
    viewer.get_by_role("button", name="Expand all").click()
    details = viewer.locator("details.scenario")
    expect(details.first).to_have_attribute("open", "")
    assert details.evaluate_all("ds => ds.every(d => d.open)")
    badge_color = viewer.locator(".badge").first.evaluate("b => getComputedStyle(b).color")
    assert badge_color != "rgb(0, 0, 0)"  # styled by the report's own stylesheet
    screenshot(viewer, "evaluation-trace-viewer")
    assert violations == [] and viewer_violations == []
