"""Across pages and browsers: ann's agent turn freezes on a held call, bob approves it on the
Approvals page in his own browser, and ann's Agent tab shows the turn finish, with no CLI step
and no reload. And a page on another origin of this host, which the browser sends ann's cookie
to (another port is the same site), cannot make the console do anything."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from tests.browser._console_process import ConsoleProcess
from tests.browser.test_agent_browser import REQUEST, SENT, ask, waiting_approval_id

SCRIPT = Path(__file__).with_name("agent_email_script.yaml")
Login = Callable[[Page, ConsoleProcess, str], None]
Shot = Callable[[Page, str], Path]


@pytest.fixture
def console_args() -> Sequence[str]:
    return ("--provider", "script", "--script", str(SCRIPT))


def test_bob_approves_on_the_approvals_page_and_anns_agent_turn_finishes_in_her_tab(
    new_context: Callable[[], BrowserContext],
    console: ConsoleProcess,
    login: Login,
    screenshot: Shot,
) -> None:
    ann = new_context().new_page()
    login(ann, console, "ann")
    ask(ann, console, REQUEST)
    approval_id = waiting_approval_id(ann)
    ann.evaluate("window.__sameDocument = true")

    bob = new_context().new_page()
    login(bob, console, "bob")
    bob.goto(console.url("/approvals"))
    card = bob.locator(f"article[data-approval-id='{approval_id}']")
    expect(card).to_contain_text("email.send")
    card.locator("form.approve input[name=comment]").fill("fine to send")
    card.locator("form.approve button[type=submit]").click()
    expect(bob.locator("#page-notice")).to_contain_text("approved")

    expect(ann.locator("#turn-status")).to_have_attribute("data-status", "completed")
    expect(ann.locator("#turn-final-answer")).to_contain_text(SENT)
    executed = ann.locator("#turn-events li[data-name='execution.completed']")
    expect(executed.filter(has_text="email.send")).to_have_count(1)
    expect(ann.locator("#held-banner")).to_have_count(0)
    assert ann.evaluate("window.__sameDocument === true"), "ann's page reloaded"
    screenshot(ann, "agent-resumed-after-page-approval")


ATTACK_PAGE = """<!doctype html><html><body>
<form id="f" method="post" action="{target}/agent">
<input name="request" value="Email the CFO the Q3 summary">
<input name="csrf" value="guessed">
</form>
<script>document.getElementById("f").submit();</script>
</body></html>"""


@contextmanager
def _attacker_site(console: ConsoleProcess) -> Iterator[str]:
    """A page on 127.0.0.1 at another port (same site, another origin) that posts a form to
    the console as soon as it loads."""
    target = console.url("/").rstrip("/")
    body = ATTACK_PAGE.format(target=target).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_a_form_posted_from_another_origin_of_this_host_starts_nothing(
    page: Page, console: ConsoleProcess, login: Login
) -> None:
    login(page, console, "ann")
    page.goto(console.url("/agent"))
    turns_before = page.locator("#agent-runs li").count()
    with _attacker_site(console) as attacker:
        with page.expect_response(lambda r: r.url.endswith("/agent")) as posted:
            page.goto(attacker)
        assert posted.value.status == 403
    page.goto(console.url("/agent"))
    expect(page.locator("#agent-runs li")).to_have_count(turns_before)
    runs = console.state_dir / "runs"
    assert not runs.exists() or not list(runs.glob("*.json")), "a forged turn was stored"
