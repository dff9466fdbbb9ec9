"""The Approvals page in Chromium: two operators in two browsers, decisions that update every
open tab without a reload, an edit refused with its reason, a rejection fed back to the run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import BrowserContext, Dialog, Locator, Page, expect

from tests.browser._console_process import ConsoleProcess
from tests.browser._proctor_cli import ask, proctor

ROOT = Path(__file__).resolve().parents[2]
REFUND = ROOT / "scenarios" / "scripts" / "refund-over-limit.yaml"
SCRIPT = "<script>alert(1)</script>"
BREAKOUT = '"><img src=x onerror=alert(1)>'
SECRET = "sk-live-ABCDEF0123456789abcdef"

Login = Callable[[Page, ConsoleProcess, str], None]
Screenshot = Callable[[Page, str], Path]


def approvals_page(
    new_context: Callable[[], BrowserContext], console: ConsoleProcess, login: Login, who: str
) -> Page:
    page = new_context().new_page()
    login(page, console, who)
    page.goto(console.url("/approvals"))
    expect(page.locator("#live-status")).to_have_text("live")
    return page


def card(page: Page, approval_id: str) -> Locator:
    return page.locator(f"article[data-approval-id='{approval_id}']")


def decided_row(page: Page, approval_id: str) -> Locator:
    return page.locator(f".decided-table tr[data-approval-id='{approval_id}']")


def mark_unreloaded(page: Page) -> None:
    page.evaluate("window.__sameDocument = true")


def assert_not_reloaded(page: Page) -> None:
    assert page.evaluate("window.__sameDocument === true"), "the page was reloaded"


def test_bob_approves_anns_call_and_anns_tab_follows_without_a_reload(
    new_context: Callable[[], BrowserContext],
    console: ConsoleProcess,
    login: Login,
    screenshot: Screenshot,
) -> None:
    ann = approvals_page(new_context, console, login, "ann")
    expect(ann.locator(".pending .empty")).to_have_text("Nothing is waiting for a decision.")
    mark_unreloaded(ann)

    asked = ask(console, REFUND, "refund ORD-0003", run_id="r1", actor="ann")
    assert "waiting_approval" in asked and "apr-1" in asked
    # The CLI's request reaches the open page by itself (the approval watch publishes it).
    expect(card(ann, "apr-1")).to_be_visible()
    expect(card(ann, "apr-1")).to_contain_text("refunds.create_draft")
    expect(card(ann, "apr-1")).to_contain_text("another operator must approve")

    # ann cannot approve her own call: the refusal is shown and the request stays pending.
    card(ann, "apr-1").locator("form.approve button[type=submit]").click()
    expect(ann.locator("#page-notice")).to_contain_text("who cannot approve it")
    expect(ann.locator("#page-notice")).to_have_attribute("data-kind", "self_approval")
    expect(card(ann, "apr-1")).to_be_visible()

    bob = approvals_page(new_context, console, login, "bob")
    expect(card(bob, "apr-1")).to_contain_text("refunds-large-need-approval")
    screenshot(bob, "approvals-pending")
    card(bob, "apr-1").locator("form.approve input[name=comment]").fill("checked the order")
    card(bob, "apr-1").locator("form.approve button[type=submit]").click()
    expect(bob.locator("#page-notice")).to_have_text(
        "apr-1 approved by bob; resume the run with: proctor approvals resume r1"
    )

    # ann's tab: the card leaves the pending list and the decision shows who made it.
    expect(card(ann, "apr-1")).to_have_count(0)
    expect(decided_row(ann, "apr-1")).to_contain_text("bob")
    expect(decided_row(ann, "apr-1")).to_contain_text("checked the order")
    assert_not_reloaded(ann)
    screenshot(ann, "approvals-decided")

    shown = proctor(console, ("approvals", "show"), "apr-1", "--json")
    assert '"decided_by": "bob"' in shown.stdout and '"status": "approved"' in shown.stdout


def test_an_edit_refused_says_why_then_an_accepted_edit_approves(
    new_context: Callable[[], BrowserContext],
    console: ConsoleProcess,
    login: Login,
    screenshot: Screenshot,
) -> None:
    ask(console, REFUND, "refund ORD-0003", run_id="r1", actor="ann")
    bob = approvals_page(new_context, console, login, "bob")
    held = card(bob, "apr-1")
    held.locator("details.edit summary").click()
    held.locator("input[name='set.order_id']").fill("ORD-9")
    # Another held call arrives while bob types: the list refreshes, his edit stays.
    ask(console, REFUND, "refund ORD-0003 again", run_id="r9", actor="ann")
    expect(card(bob, "apr-2")).to_be_visible()
    expect(held.locator("input[name='set.order_id']")).to_have_value("ORD-9")
    held.locator("form.approve button[type=submit]").click()
    expect(held.locator(".card-notice")).to_contain_text("edit refused")
    expect(held.locator(".card-notice")).to_contain_text("the request stays pending")
    expect(bob.locator("#page-notice")).to_have_attribute("data-kind", "edit_refused")
    screenshot(bob, "approvals-edit-refused")

    held.locator("input[name='set.order_id']").fill("")
    held.locator("input[name='set.amount']").fill("80")
    held.locator("form.approve button[type=submit]").click()
    expect(bob.locator("#page-notice")).to_contain_text(
        "apr-1 approved by bob with edited arguments; resume the run with"
    )
    expect(decided_row(bob, "apr-1")).to_contain_text('"amount": 80')

    resumed = proctor(console, ("approvals", "resume"), "r1", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert "Drafted refund 1 of 80.0 for ORD-0003." in resumed.stdout


def test_a_rejection_needs_a_comment_and_is_fed_back_to_the_run(
    new_context: Callable[[], BrowserContext],
    console: ConsoleProcess,
    login: Login,
) -> None:
    ask(console, REFUND, "refund ORD-0003", run_id="r2", actor="ann")
    bob = approvals_page(new_context, console, login, "bob")
    ann = approvals_page(new_context, console, login, "ann")
    mark_unreloaded(ann)
    reject = card(bob, "apr-1").locator("form.reject")
    reject.locator("button[type=submit]").click()  # no comment: the browser asks for one
    expect(card(bob, "apr-1")).to_be_visible()
    assert proctor(console, ("approvals", "show"), "apr-1", "--json").stdout.count('"pending"')
    reject.locator("input[name=comment]").fill("refunds over 200 need a manager")
    reject.locator("button[type=submit]").click()
    expect(bob.locator("#page-notice")).to_have_text("apr-1 rejected by bob")
    expect(decided_row(ann, "apr-1")).to_contain_text("refunds over 200 need a manager")
    expect(decided_row(ann, "apr-1")).to_contain_text("rejected")
    assert_not_reloaded(ann)

    resumed = proctor(console, ("approvals", "resume"), "r2", "--json")
    assert '"status": "blocked"' in resumed.stdout
    assert "The refund was not drafted." in resumed.stdout


def test_payloads_in_a_held_call_render_as_text_and_the_secret_stays_sealed(
    new_context: Callable[[], BrowserContext],
    console: ConsoleProcess,
    login: Login,
    screenshot: Screenshot,
    tmp_path: Path,
) -> None:
    script = tmp_path / "payload.yaml"
    reason = f"{SCRIPT} {BREAKOUT} api_key={SECRET}"
    script.write_text(
        "script:\n  - calls:\n      - tool: refunds.create_draft\n        args: "
        + '{order_id: ORD-0003, amount: 250.0, reason: "'
        + reason.replace("\\", "\\\\").replace('"', '\\"')
        + '"}\n  - answer: "done"\n'
    )
    ask(console, script, "refund", run_id="r3", actor="ann")
    dialogs: list[str] = []
    bob = new_context().new_page()
    bob.on("dialog", lambda dialog: (dialogs.append(dialog.message), _dismiss(dialog)))
    login(bob, console, "bob")
    bob.goto(console.url("/approvals"))
    arguments = card(bob, "apr-1").locator("pre.arguments")
    expect(arguments).to_contain_text(SCRIPT)
    expect(arguments).to_contain_text("onerror=alert(1)>")
    assert bob.locator("main img").count() == 0 and bob.locator("main script").count() == 0
    assert SECRET not in bob.content()
    screenshot(bob, "approvals-payloads-as-text")
    card(bob, "apr-1").locator("form.reject input[name=comment]").fill(BREAKOUT)
    card(bob, "apr-1").locator("form.reject button[type=submit]").click()
    expect(decided_row(bob, "apr-1").locator(".comment")).to_have_text(BREAKOUT)
    assert bob.locator("main img").count() == 0
    assert dialogs == []


def _dismiss(dialog: Dialog) -> None:
    dialog.dismiss()
