"""The Audit page in Chromium: a run `proctor ask` recorded on the console's own state dir is
listed, filtered by outcome, its hostile arguments shown as text, and verified: OK, then (after a
row of the SQLite file is changed behind the console's back) BROKEN at that row's seq."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Dialog, Page, expect

from tests.browser._console_process import ConsoleProcess

pytestmark = pytest.mark.browser

PAGE = "/audit"

Login = Callable[[Page, ConsoleProcess, str], None]


SCRIPT_TAG = "<script>alert(1)</script>"
ATTR_BREAK = '"><img src=x onerror=alert(1)>'
# The model reads a file that is not there (allowed, fails) and one under secrets/ (blocked),
# each path carrying markup.
BLOCKED_RUN = f"""
script:
  - calls:
      - tool: fs.read
        args: {{path: "notes/{SCRIPT_TAG}.txt"}}
      - tool: fs.read
        args: {{path: 'secrets/{ATTR_BREAK}'}}
  - answer: done
"""
# Only a listing, which the shipped policy allows and which executes.
CLEAN_RUN = """
script:
  - calls:
      - tool: fs.list
        args: {path: notes}
  - answer: listed
"""


def _ask(console: ConsoleProcess, tmp_path: Path, run_id: str, script: str) -> None:
    path = tmp_path / f"{run_id}.yaml"
    path.write_text(script, encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable, "-m", "harness", "ask", "--state-dir", str(console.state_dir),
            "--policy", str(console.policy_path), "--script", str(path), "--run-id", run_id,
            "do the task",
        ],
        check=False, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    # 0: answered; 1: a call was refused (the blocked run). Either way the chain holds the run.
    assert done.returncode in (0, 1), done.stdout + done.stderr


def _no_dialogs(page: Page) -> list[str]:
    opened: list[str] = []

    def record(dialog: Dialog) -> None:
        opened.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", record)
    return opened


def _tamper_first_blocked_request(state_dir: Path, run_id: str) -> int:
    """Rewrite the stored arguments of the blocked call (as someone with the file could);
    returns that row's seq."""
    with sqlite3.connect(state_dir / "audit.sqlite") as conn:
        seq, data = conn.execute(
            "SELECT seq, data FROM audit_events WHERE run_id = ? AND kind = 'tool.requested' "
            "AND data LIKE '%secrets/%' ORDER BY seq LIMIT 1",
            (run_id,),
        ).fetchone()
        conn.execute(
            "UPDATE audit_events SET data = ? WHERE run_id = ? AND seq = ?",
            (data.replace("secrets/", "notes/"), run_id, seq),
        )
    return int(seq)


def test_the_audit_page_lists_a_run_from_proctor_ask_and_filters_it_by_outcome(
    page: Page,
    console: ConsoleProcess,
    login: Login,
    screenshot: Callable[[Page, str], Path],
    tmp_path: Path,
) -> None:
    _ask(console, tmp_path, "run-blocked", BLOCKED_RUN)
    _ask(console, tmp_path, "run-clean", CLEAN_RUN)
    dialogs = _no_dialogs(page)
    login(page, console, "ann")
    page.goto(console.url(PAGE))
    page.goto(console.url("/audit"))
    runs = page.locator("#audit-runs tbody tr")
    expect(runs).to_have_count(2)
    expect(page.locator('tr[data-run-id="run-blocked"] .chain')).to_contain_text("verifies")
    screenshot(page, "audit")

    page.select_option("select[name=outcome]", "block")
    page.get_by_role("button", name="Filter").click()
    expect(runs).to_have_count(1)
    expect(runs.first).to_have_attribute("data-run-id", "run-blocked")
    page.select_option("select[name=outcome]", "executed")
    page.get_by_role("button", name="Filter").click()
    expect(runs).to_have_count(1)
    expect(runs.first).to_have_attribute("data-run-id", "run-clean")

    page.goto(console.url("/audit/run?id=run-blocked"))
    expect(page.locator("#audit-events")).to_contain_text(SCRIPT_TAG)
    expect(page.locator("#audit-events")).to_contain_text(ATTR_BREAK)
    assert page.locator("#audit-events img").count() == 0
    assert page.locator("#audit-events script").count() == 0
    screenshot(page, "audit-run")
    assert dialogs == []


def test_verify_says_ok_then_names_the_seq_of_a_tampered_row(
    page: Page,
    console: ConsoleProcess,
    login: Login,
    screenshot: Callable[[Page, str], Path],
    tmp_path: Path,
) -> None:
    _ask(console, tmp_path, "run-blocked", BLOCKED_RUN)
    _ask(console, tmp_path, "run-clean", CLEAN_RUN)
    login(page, console, "ann")
    page.goto(console.url(PAGE))
    page.goto(console.url("/audit"))
    page.get_by_role("button", name="Verify every chain").click()
    expect(page.locator("#verify-summary")).to_have_text("OK: 2 chain(s) verify.")

    seq = _tamper_first_blocked_request(console.state_dir, "run-blocked")
    page.goto(console.url("/audit/run?id=run-blocked"))
    page.get_by_role("button", name="Verify this chain").click()
    summary = page.locator("#verify-summary")
    expect(summary).to_contain_text("1 of 1 chain(s) BROKEN")
    expect(summary).to_contain_text(f"first bad seq {seq} (")
    expect(page.locator('tr[data-run-id="run-blocked"] .first-bad-seq')).to_have_text(str(seq))
    screenshot(page, "audit-verify-broken")

    page.goto(console.url("/audit"))
    expect(page.locator('tr[data-run-id="run-blocked"] .chain')).to_contain_text(
        f"BROKEN at seq {seq}"
    )
    expect(page.locator('tr[data-run-id="run-clean"] .chain')).to_contain_text("verifies")
