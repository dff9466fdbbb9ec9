"""The Policies page in Chromium against a real `proctor console`: problems shown at their lines
as the operator types, a refused save that leaves the file alone, a save the next call obeys,
two tabs that cannot overwrite each other, markup shown as text, the shipped policy read-only."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import BrowserContext, Dialog, Page, expect

from tests.browser._console_command import SHIPPED_POLICY, proctor_console_command
from tests.browser._console_process import ConsoleProcess, start_console_process

pytestmark = pytest.mark.browser

Shot = Callable[[Page, str], Path]

FS_READ_ALLOWED = (
    "  - id: fs-read\n"
    "    description: Listing and reading workspace files is fine, except under secrets/\n"
    "    effect: allow\n"
)  # the shipped rule that lets fs.list run
FS_READ_BLOCKED = FS_READ_ALLOWED.replace("effect: allow", "effect: block")
LIST_SCRIPT = """\
script:
  - calls:
      - tool: fs.list
        args: {path: '.'}
  - answer: done
"""
ASK_TIMEOUT = 120.0  # seconds: a bound on one `proctor ask` on a loaded machine


def _open_policies(page: Page, console: ConsoleProcess, operator: str) -> None:
    """Sign in as `operator` straight onto the Policies page (the sign-in form's `next`), and
    wait for its live stream: from then on no save made elsewhere goes unheard."""
    page.goto(console.login_url + "&next=%2Fpolicies")
    page.locator("input[name=operator]").fill(operator)
    with page.expect_navigation():
        page.locator("form:has(input[name=operator]) [type=submit]").click()
    assert urlparse(page.url).path == "/policies", page.inner_text("body")
    expect(page.locator("#live-status")).to_have_text("live")


def _set_text(page: Page, text: str) -> None:
    """Replace the editor's text as a paste would (an `input` event, then validation)."""
    page.locator("#policy-text").fill(text)


def _validated(page: Page) -> None:
    """Wait for the validation of the editor's latest text to come back."""
    expect(page.locator("#validation-status")).to_have_attribute("data-state", "done")


def _ask_list_files(console: ConsoleProcess, tmp_path: Path) -> str:
    """`proctor ask` on the console's state dir and policy file, as a separate process: how
    the one fs.list call it proposes ends (executed, blocked...)."""
    script = tmp_path / "list.yaml"
    script.write_text(LIST_SCRIPT, encoding="utf-8")
    command = [
        sys.executable, "-m", "harness", "ask", "list the files",
        "--script", str(script), "--state-dir", str(console.state_dir),
        "--policy", str(console.policy_path), "--json",
    ]  # fmt: skip
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=ASK_TIMEOUT,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr  # 1: the run did not end as answered
    [outcome] = json.loads(done.stdout)["attempted"].values()
    return str(outcome)


def test_an_invalid_edit_shows_its_problem_at_its_line_and_its_save_is_refused(
    page: Page, console: ConsoleProcess, screenshot: Shot
) -> None:
    _open_policies(page, console, "ann")
    before = console.policy_path.read_bytes()
    expect(page.locator("#validation-status")).to_contain_text("valid")
    screenshot(page, "policies-editor")
    editor = page.locator("#policy-text")
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.type("\nnot_a_key: true\n")
    line = editor.input_value().splitlines().index("not_a_key: true") + 1
    problem = page.locator("#validation-problems button.problem").first
    expect(problem).to_contain_text(f"line {line}")
    expect(problem).to_contain_text("unknown key 'not_a_key'")
    _validated(page)
    expect(page.locator("#validation-status")).to_contain_text("1 problem")
    page.keyboard.press("Control+Home")
    problem.click()  # the caret goes to the problem's line
    expect(page.locator("#caret-line")).to_have_text(f"line {line}")
    page.locator("#policy-save").click()
    expect(page.locator("#save-message")).to_contain_text("does not validate")
    expect(page.locator("#save-problems")).to_contain_text(f"line {line}")
    screenshot(page, "policies-invalid-refused")
    assert console.policy_path.read_bytes() == before


def test_a_saved_edit_applies_on_the_next_call_and_shows_its_diff(
    page: Page, console: ConsoleProcess, screenshot: Shot, tmp_path: Path
) -> None:
    assert _ask_list_files(console, tmp_path) == "executed"
    _open_policies(page, console, "ann")
    text = page.locator("#policy-text").input_value()
    assert FS_READ_ALLOWED in text
    old_digest = page.locator("#policy-digest").inner_text()
    _set_text(page, text.replace(FS_READ_ALLOWED, FS_READ_BLOCKED))
    _validated(page)
    expect(page.locator("#validation-status")).to_contain_text("valid")
    expect(page.locator("#validation-problems li")).to_have_count(0)
    page.locator("#policy-save").click()
    expect(page.locator("#save-message")).to_contain_text("saved: the next call is decided")
    expect(page.locator("#save-diff .del")).to_have_text("-    effect: allow\n")
    expect(page.locator("#save-diff .add")).to_have_text("+    effect: block\n")
    new_digest = page.locator("#policy-digest").inner_text()
    assert new_digest != old_digest and new_digest in page.locator("#save-message").inner_text()
    assert FS_READ_BLOCKED in console.policy_path.read_text(encoding="utf-8")
    screenshot(page, "policies-saved")
    assert _ask_list_files(console, tmp_path) == "blocked"
    # The page adopted the new digest: a second edit saves without a conflict.
    expect(page.locator("#policy-changed")).to_be_hidden()
    _set_text(page, text)
    page.locator("#policy-save").click()
    expect(page.locator("#policy-digest")).not_to_have_text(new_digest)
    expect(page.locator("#save-message")).to_contain_text("saved:")
    assert console.policy_path.read_text(encoding="utf-8") == text


def test_a_save_from_a_stale_tab_is_refused_and_it_is_told_to_reload(
    new_context: Callable[[], BrowserContext],
    console: ConsoleProcess,
    screenshot: Shot,
) -> None:
    ann, bob = new_context().new_page(), new_context().new_page()
    _open_policies(ann, console, "ann")
    _open_policies(bob, console, "bob")
    text = ann.locator("#policy-text").input_value()
    anns = text.replace(FS_READ_ALLOWED, FS_READ_BLOCKED)
    bobs = text + "# bob was here\n"
    seen = ann.locator("body").get_attribute("data-live-after") or ""
    _set_text(ann, anns)
    ann.locator("#policy-save").click()
    expect(ann.locator("#save-message")).to_contain_text("saved:")
    # Bob's page hears of it, and says who changed it; Ann's own page knows it was hers.
    expect(bob.locator("#policy-changed")).to_be_visible()
    expect(bob.locator("#policy-changed-text")).to_contain_text("changed (by ann)")
    expect(ann.locator("body")).not_to_have_attribute("data-live-after", seen)
    expect(ann.locator("#policy-changed")).to_be_hidden()
    # Bob saves anyway: refused, Ann's policy stays.
    _set_text(bob, bobs)
    bob.locator("#policy-save").click()
    expect(bob.locator("#save-message")).to_contain_text("changed since the editor loaded it")
    expect(bob.locator("#policy-changed-text")).to_contain_text("loaded it (by ann): your save")
    screenshot(bob, "policies-conflict")
    assert console.policy_path.read_text(encoding="utf-8") == anns
    # Reloading shows Ann's policy and keeps Bob's draft on the page to copy from.
    bob.locator("#policy-reload").click()
    expect(bob.locator("#policy-text")).to_have_value(anns)
    expect(bob.locator("#policy-changed")).to_be_hidden()
    expect(bob.locator("#discarded-draft pre")).to_have_text(bobs)
    assert bob.locator("#policy-digest").inner_text() == ann.locator("#policy-digest").inner_text()
    _set_text(bob, anns + "# bob was here\n")
    bob.locator("#policy-save").click()
    expect(bob.locator("#save-message")).to_contain_text("saved:")
    assert console.policy_path.read_text(encoding="utf-8") == anns + "# bob was here\n"


def test_markup_in_a_rule_description_is_shown_as_text_in_the_editor_and_in_explain(
    page: Page, console: ConsoleProcess, screenshot: Shot
) -> None:
    payload = '<script>alert(1)</script> "><img src=x onerror=alert(2)>'
    policy = console.policy_path.read_text(encoding="utf-8")
    marked = policy.replace(
        "description: Listing and reading workspace files is fine, except under secrets/",
        f"description: '{payload}'",
    )
    assert marked != policy
    console.policy_path.write_text(marked, encoding="utf-8")
    dialogs: list[str] = []

    def record(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", record)
    _open_policies(page, console, "ann")
    expect(page.locator("#policy-text")).to_have_value(marked)
    page.locator("#explain-tool").select_option("fs.read")
    page.locator("#explain-arguments").fill('{"path": "notes/todo.txt"}')
    page.locator("#explain-run").click()
    expect(page.locator("#explain-effect")).to_have_text("allow")
    expect(page.locator("#explain-rule-ids")).to_have_text("fs-read")
    expect(page.locator("#explain-message")).to_have_text(f"allowed by rule fs-read: {payload}")
    screenshot(page, "policies-explain-markup")
    assert page.locator("main img, main script").count() == 0
    assert dialogs == []


def test_explain_under_the_draft_shows_what_the_edit_would_decide(
    page: Page, console: ConsoleProcess
) -> None:
    _open_policies(page, console, "ann")
    text = page.locator("#policy-text").input_value()
    _set_text(page, text.replace(FS_READ_ALLOWED, FS_READ_BLOCKED))
    page.locator("#explain-tool").select_option("fs.list")
    page.locator("#explain-under").select_option("draft")
    page.locator("#explain-run").click()
    expect(page.locator("#explain-effect")).to_have_text("block")
    expect(page.locator("#explain-rule-ids")).to_have_text("fs-read")
    page.locator("#explain-under").select_option("file")
    page.locator("#explain-run").click()
    expect(page.locator("#explain-effect")).to_have_text("allow")
    page.locator("#explain-arguments").fill("{not json")
    page.locator("#explain-run").click()
    expect(page.locator("#explain-result .error")).to_contain_text("not valid JSON")


def test_the_shipped_policy_is_read_only_with_the_fix_on_the_page(
    page: Page, screenshot: Shot, tmp_path: Path
) -> None:
    """A console started without --policy: saving is disabled and the page says how to edit."""
    command = proctor_console_command(
        token="t" * 32, state_dir=tmp_path / "state", policy_path=SHIPPED_POLICY, extra_args=()
    )
    at = command.index("--policy")
    del command[at : at + 2]
    console = start_console_process(
        command, token="t" * 32, state_dir=tmp_path / "state", policy_path=SHIPPED_POLICY,
        workdir=tmp_path / "cwd",
    )  # fmt: skip
    try:
        before = SHIPPED_POLICY.read_bytes()
        _open_policies(page, console, "ann")
        expect(page.locator("#read-only")).to_be_visible()
        expect(page.locator("#read-only")).to_contain_text("--policy FILE")
        expect(page.locator("#policy-mode")).to_have_text("read-only")
        expect(page.locator("#policy-save")).to_be_disabled()
        expect(page.locator("#policy-text")).to_have_value(before.decode("utf-8"))
        screenshot(page, "policies-read-only")
        # Drafts still validate there; a save forced through the page's script is refused.
        _set_text(page, before.decode("utf-8") + "# mine\n")
        _validated(page)
        expect(page.locator("#validation-status .badge")).to_have_text("valid")
        status = page.evaluate(
            """async () => (await window.Proctor.post("/policies/save", {
                 text: "version: 1\\n",
                 digest: document.getElementById("policies").dataset.digest,
               })).status"""
        )
        assert status == 403
        assert SHIPPED_POLICY.read_bytes() == before
    finally:
        console.stop()
