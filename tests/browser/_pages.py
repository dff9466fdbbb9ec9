"""What every browser test does with a page: sign in as an operator, save a screenshot."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Page

from tests.browser._console_process import ConsoleProcess

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT_DIR = ROOT / "reports" / "screenshots"  # reports/ is git-ignored but for its README
_SCREENSHOT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def login(page: Page, console: ConsoleProcess, operator: str) -> None:
    """Open the console's token URL, sign in as `operator`, and wait for the nav of a page
    behind the login. Fails (with the page's text) when the login page does not let them in."""
    page.goto(console.login_url)
    field = page.locator("input[name=operator]")
    field.fill(operator)
    with page.expect_navigation():
        page.locator("form:has(input[name=operator]) [type=submit]").click()
    if urlparse(page.url).path == "/login":
        pytest.fail(
            f"signing in as {operator!r} stayed on the login page:\n{page.inner_text('body')}",
            pytrace=False,
        )
    page.locator("nav").first.wait_for(state="visible")


def save_screenshot(page: Page, name: str, folder: Path = SCREENSHOT_DIR) -> Path:
    """The whole page as `<folder>/<name>.png` (the folder is created); returns the path."""
    if not _SCREENSHOT_NAME.fullmatch(name):
        raise ValueError(f"screenshot name {name!r}: use letters, digits, '.', '_', '-'")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
