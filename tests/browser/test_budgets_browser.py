"""The Budgets page in Chromium: an exhausted budget is released only by two people, one
asking and another confirming, and every open tab follows without a reload."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import BrowserContext, Locator, Page, expect

from tests.browser._console_process import ConsoleProcess
from tests.browser._proctor_cli import ask, proctor

POLICY = """\
version: 1
rules:
  - {id: delete-notes, description: Deleting notes is fine, effect: allow, match: {tool: fs.delete}}
budgets:
  - id: one-per-run
    description: One deletion per run
    scope: agent_run
    limit: 1
    window_seconds: 3600
"""
DELETE = """\
script:
  - calls:
      - tool: fs.delete
        args: {path: notes/todo.txt}
  - answer: "Deleted."
"""

Login = Callable[[Page, ConsoleProcess, str], None]
Screenshot = Callable[[Page, str], Path]


def budgets_page(
    new_context: Callable[[], BrowserContext], console: ConsoleProcess, login: Login, who: str
) -> Page:
    page = new_context().new_page()
    login(page, console, who)
    page.goto(console.url("/budgets"))
    expect(page.locator("#live-status")).to_have_text("live")
    page.evaluate("window.__sameDocument = true")
    return page


def usage_row(page: Page) -> Locator:
    return page.locator("tr[data-budget='one-per-run'][data-key='r1']")


def pending_reset(page: Page) -> Locator:
    return page.locator("article.pending-reset")


def test_an_exhausted_budget_is_released_by_two_people_and_both_tabs_follow(
    new_context: Callable[[], BrowserContext],
    start_console: Callable[..., ConsoleProcess],
    login: Login,
    screenshot: Screenshot,
    tmp_path: Path,
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    script = tmp_path / "delete.yaml"
    script.write_text(DELETE)
    console = start_console(policy_path=policy)
    ask(console, script, "tidy the notes", run_id="r1", actor="ann")

    dana = budgets_page(new_context, console, login, "dana")
    erin = budgets_page(new_context, console, login, "erin")
    expect(usage_row(dana)).to_have_class("exhausted")
    expect(usage_row(dana)).to_contain_text("1 / 1")
    expect(usage_row(dana)).to_contain_text("EXHAUSTED")

    usage_row(dana).locator("input[name=reason]").fill("the loop is fixed")
    usage_row(dana).locator("button[type=submit]").click()
    expect(dana.locator("#page-notice")).to_contain_text("a different operator must confirm it")
    # erin's tab shows the request without a reload; dana cannot confirm her own.
    expect(pending_reset(erin)).to_contain_text("the loop is fixed")
    expect(pending_reset(erin).locator(".requested-by")).to_have_text("dana")
    pending_reset(dana).locator("form.confirm-reset button").click()
    expect(dana.locator("#page-notice")).to_contain_text("cannot both request and approve a reset")
    expect(dana.locator("#page-notice")).to_have_attribute("data-kind", "same_person")
    expect(usage_row(dana)).to_contain_text("EXHAUSTED")
    screenshot(erin, "budgets-reset-waiting")

    pending_reset(erin).locator("form.confirm-reset button").click()
    expect(erin.locator("#page-notice")).to_have_text(
        "reset one-per-run for agent_run=r1 (by dana, approved by erin)"
    )
    for page in (dana, erin):
        expect(usage_row(page)).to_contain_text("0 / 1")
        expect(usage_row(page)).not_to_have_class("exhausted")
        expect(pending_reset(page)).to_have_count(0)
        expect(page.locator("table.resets")).to_contain_text("the loop is fixed")
        assert page.evaluate("window.__sameDocument === true"), "the page was reloaded"
    screenshot(dana, "budgets")

    status = proctor(console, ("budgets", "status"), "--json")
    assert '"used": 0' in status.stdout and '"watermark": null' not in status.stdout
