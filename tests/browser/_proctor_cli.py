"""Running `proctor` commands against a console's state dir, as another terminal would; signing
in straight onto one page."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, urlparse

from playwright.sync_api import Page

from tests.browser._console_process import ConsoleProcess

CLI_TIMEOUT = 120


def proctor(
    console: ConsoleProcess, command: tuple[str, ...], *args: str
) -> subprocess.CompletedProcess[str]:
    """`proctor COMMAND --state-dir <the console's> --policy <the console's> ARGS`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROCTOR_")}
    argv = [
        sys.executable, "-m", "harness", *command,
        "--state-dir", str(console.state_dir), "--policy", str(console.policy_path), *args,
    ]  # fmt: skip
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=CLI_TIMEOUT, env=env, check=False
    )


def ask(console: ConsoleProcess, script: Path, request: str, *, run_id: str, actor: str) -> str:
    """A replayed agent turn proposed by `actor`; its stdout (the run waits or completes)."""
    done = proctor(
        console, ("ask",), "--script", str(script), request, "--run-id", run_id, "--actor", actor
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def login_landing_on(path: str) -> Callable[[Page, ConsoleProcess, str], None]:
    """The `login` fixture's sign-in, landing on `path` instead of the console's home page (so
    these tests do not depend on another page being served)."""

    def sign_in(page: Page, console: ConsoleProcess, operator: str) -> None:
        page.goto(f"{console.login_url}&next={quote(path, safe='')}")
        page.locator("input[name=operator]").fill(operator)
        with page.expect_navigation():
            page.locator("form:has(input[name=operator]) [type=submit]").click()
        assert urlparse(page.url).path == path, page.inner_text("body")
        page.locator("nav").first.wait_for(state="visible")

    return sign_in
