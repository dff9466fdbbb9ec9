"""The Agent page in a real browser: a turn freezes on a held call, shows what it waits for,
and continues on its own, without a reload, when someone else decides (the CLI here, as
another process would); a reload or a dropped connection while it waits loses nothing."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from tests.browser._console_process import ConsoleProcess
from tests.browser._cuttable_proxy import cuttable_proxy

SCRIPT = Path(__file__).with_name("agent_email_script.yaml")
REQUEST = "Email the CFO the Q3 summary"
SENT = "Sent the Q3 summary to the CFO"
NOT_SENT = "I did not send the email"
CLI_TIMEOUT = 60

Login = Callable[[Page, ConsoleProcess, str], None]
Shot = Callable[[Page, str], Path]


@pytest.fixture
def console_args() -> Sequence[str]:
    return ("--provider", "script", "--script", str(SCRIPT))


def ask(page: Page, console: ConsoleProcess, text: str) -> str:
    """Start a turn from the page; its run id (the page it lands on)."""
    page.goto(console.url("/agent"))
    page.locator("#agent-request").fill(text)
    with page.expect_navigation():
        page.get_by_role("button", name="Start turn").click()
    run_id = page.locator("#agent").get_attribute("data-run-id")
    assert run_id, page.url
    return run_id


def waiting_approval_id(page: Page) -> str:
    """Wait until the page says the turn waits for approval; the approval id it shows."""
    banner = page.locator("#held-banner[data-held-status=pending]")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("Waiting for approval")
    expect(page.locator("#turn-status")).to_have_attribute("data-status", "waiting_approval")
    approval_id = page.locator("#held-approval-id").inner_text()
    assert approval_id.startswith("apr-")
    return approval_id


def decide(console: ConsoleProcess, verb: str, approval_id: str, *extra: str) -> None:
    """`proctor approvals <verb>` as bob, in its own process, on the console's stores."""
    command = [
        sys.executable, "-m", "harness", "approvals", verb, approval_id, "--reviewer", "bob",
        "--state-dir", str(console.state_dir), "--policy", str(console.policy_path), *extra,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=CLI_TIMEOUT)
    assert done.returncode == 0, done.stdout + done.stderr


def mark_page(page: Page) -> None:
    """A flag a reload would clear: proves a later check ran on the same document."""
    page.evaluate("window.__sameDocument = true")


def same_document(page: Page) -> bool:
    return bool(page.evaluate("window.__sameDocument === true"))


def event_rows(page: Page) -> list[str]:
    rows = page.locator("#turn-events > li")
    return [f"{rows.nth(i).get_attribute('data-seq')} {rows.nth(i).get_attribute('data-name')}"
            for i in range(rows.count())]  # fmt: skip


def assert_all_events_once(page: Page) -> None:
    seqs = [int(row.split()[0]) for row in event_rows(page)]
    assert seqs == list(range(1, len(seqs) + 1)), seqs


def test_a_held_turn_waits_on_the_page_and_resumes_by_itself_when_bob_approves_from_the_cli(
    page: Page, console: ConsoleProcess, login: Login, screenshot: Shot
) -> None:
    login(page, console, "ann")
    ask(page, console, REQUEST)
    approval_id = waiting_approval_id(page)
    expect(page.locator("#held-banner")).to_contain_text("email.send")
    expect(page.locator("#held-banner")).to_contain_text("email-needs-approval")
    expect(page.locator("#held-banner .held-arguments")).to_contain_text("cfo@example.com")
    expect(page.locator("#held-banner .countdown")).to_have_text(re.compile(r"^\d+m \d\ds$"))
    expect(page.locator("#held-banner a[href='/approvals']")).to_be_visible()
    expect(page.locator("#turn-events li[data-name='approval.required']")).to_contain_text(
        approval_id
    )
    assert page.locator("#turn-final-answer").count() == 0
    screenshot(page, "agent")
    mark_page(page)

    decide(console, "approve", approval_id)

    expect(page.locator("#turn-status")).to_have_attribute("data-status", "completed")
    expect(page.locator("#turn-final-answer")).to_contain_text(SENT)
    executed = page.locator("#turn-events li[data-name='execution.completed']")
    expect(executed.filter(has_text="email.send")).to_have_count(1)
    expect(page.locator("#turn-events li[data-name='decided']")).to_contain_text("approved by bob")
    expect(page.locator("#held-banner")).to_have_count(0)
    expect(page.locator("#agent-runs li.selected")).to_contain_text("turn completed")
    assert same_document(page), "the page reloaded to show the continuation"
    assert_all_events_once(page)
    page.locator("#turn-transcript-box summary").click()
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "agent-completed")


def test_a_rejection_is_fed_back_to_the_agent_and_every_watching_page_shows_it(
    new_context: Callable[[], BrowserContext], console: ConsoleProcess, login: Login,
    screenshot: Shot,
) -> None:  # fmt: skip
    ann = new_context().new_page()
    bob = new_context().new_page()
    login(ann, console, "ann")
    login(bob, console, "bob")
    run_id = ask(ann, console, REQUEST)
    approval_id = waiting_approval_id(ann)
    bob.goto(console.url(f"/agent/{run_id}"))  # bob follows ann's turn in his own browser
    assert waiting_approval_id(bob) == approval_id
    mark_page(ann)
    mark_page(bob)

    decide(console, "reject", approval_id, "--comment", "wrong recipient")

    for page in (ann, bob):
        expect(page.locator("#turn-status")).to_have_attribute("data-status", "blocked")
        # The agent was told (its last turn answers from the refusal); the page's answer is
        # the run's own honest account of what did not happen.
        expect(page.locator("#turn-final-answer")).to_contain_text("approval_rejected")
        model_turns = page.locator("#turn-events li[data-name='model.turn']")
        expect(model_turns.last).to_contain_text(NOT_SENT)
        decided = page.locator("#turn-events li[data-name='decided']")
        expect(decided).to_contain_text("rejected by bob")
        expect(decided).to_contain_text("wrong recipient")
        expect(page.locator("#turn-events li[data-name='execution.completed']")).to_have_count(1)
        assert same_document(page)
        assert_all_events_once(page)
    assert event_rows(ann) == event_rows(bob)
    screenshot(ann, "agent-rejected")


def test_a_reload_while_waiting_shows_the_same_waiting_turn_which_then_resumes(
    page: Page, console: ConsoleProcess, login: Login
) -> None:
    login(page, console, "ann")
    ask(page, console, REQUEST)
    approval_id = waiting_approval_id(page)
    before = event_rows(page)
    page.reload()
    assert waiting_approval_id(page) == approval_id
    assert event_rows(page) == before
    mark_page(page)

    decide(console, "approve", approval_id)

    expect(page.locator("#turn-final-answer")).to_contain_text(SENT)
    assert same_document(page)
    after = event_rows(page)
    assert after[: len(before)] == before and len(after) > len(before)
    assert_all_events_once(page)


def test_a_dropped_connection_catches_up_on_everything_it_missed_once_back(
    new_context: Callable[[], BrowserContext], console: ConsoleProcess, login: Login
) -> None:
    upstream = urlsplit(console.base_url)
    assert upstream.hostname is not None and upstream.port is not None
    with cuttable_proxy((upstream.hostname, upstream.port)) as proxy:
        # ann reaches the console through a connection the test can cut; carol directly.
        through_proxy = replace(console, base_url=f"http://127.0.0.1:{proxy.port}")
        ann = new_context().new_page()
        watcher = new_context().new_page()
        login(ann, through_proxy, "ann")
        login(watcher, console, "carol")
        run_id = ask(ann, through_proxy, REQUEST)
        approval_id = waiting_approval_id(ann)
        watcher.goto(console.url(f"/agent/{run_id}"))
        waiting_approval_id(watcher)
        expect(ann.locator("#live-status")).to_have_attribute("data-state", "live")
        mark_page(ann)

        proxy.cut()
        expect(ann.locator("#live-status")).to_have_attribute("data-state", "reconnecting")
        decide(console, "approve", approval_id)
        expect(watcher.locator("#turn-final-answer")).to_contain_text(SENT)  # while ann is off
        assert ann.locator("#turn-final-answer").count() == 0
        assert ann.locator("#turn-status").get_attribute("data-status") == "waiting_approval"
        proxy.restore()

        expect(ann.locator("#live-status")).to_have_attribute("data-state", "live")
        expect(ann.locator("#turn-final-answer")).to_contain_text(SENT)
        expect(ann.locator("#turn-events > li")).to_have_count(len(event_rows(watcher)))
        assert event_rows(ann) == event_rows(watcher)
        assert_all_events_once(ann)
        assert same_document(ann)


def test_a_request_with_markup_is_shown_as_text_and_never_runs(
    page: Page, console: ConsoleProcess, login: Login
) -> None:
    payload = '"><img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'
    login(page, console, "ann")
    ask(page, console, payload)
    waiting_approval_id(page)
    expect(page.locator("#turn-request")).to_have_text(payload)
    expect(page.locator("#agent-runs li.selected .agent-run-request")).to_have_text(payload)
    assert page.locator("img[src=x]").count() == 0
    assert page.evaluate("window.__xss === undefined")
