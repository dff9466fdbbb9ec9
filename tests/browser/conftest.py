"""Fixtures for the browser tests: Debian's Chromium driven by Playwright, a console server.

- `chromium_path`: the browser binary (`PROCTOR_CHROMIUM`, /usr/bin/chromium, or on PATH);
  skipped locally when missing, a failure under `PROCTOR_REQUIRE_CHROMIUM=1` (`.ci/run`).
- `browser`: one headless Chromium for the session. `new_context()`: a fresh cookie jar, i.e.
  a separate operator; `page`: a page in its own context.
- `console`: `proctor console --port 0` on a temporary state dir and a writable copy of the
  shipped policy, stopped (and checked to exit) at the end; `console_args` adds options, and
  `start_console(...)` starts more (for instance a second console on the same state dir).
- `login(page, console, operator)`, `screenshot(page, name)` -> reports/screenshots/<name>.png;
  a test that fails leaves each page it had open in reports/screenshots/failures/.

The command that starts a console comes from one function, `proctor_console_command` in
_console_command.py, through the `console_command` fixture (the fixture self-test swaps in a
fake server there).
"""

from __future__ import annotations

import re
import secrets
import shutil
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, ViewportSize, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from tests.browser._chromium import find_chromium
from tests.browser._console_command import (
    SHIPPED_POLICY,
    ConsoleCommand,
    proctor_console_command,
)
from tests.browser._console_process import ConsoleProcess, start_console_process
from tests.browser._pages import SCREENSHOT_DIR, save_screenshot
from tests.browser._pages import login as _login

# Viewport of every context, so screenshots of one page compare across runs.
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
# Actions and waits give up after this (ms): this machine is shared, but a hang must still end.
ACTION_TIMEOUT_MS = 20_000
_CALL_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item,
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Remember a failed test body, so its pages are photographed before they close."""
    report = yield
    if report.when == "call" and report.failed:
        item.stash[_CALL_FAILED] = True
    return report


@pytest.fixture(scope="session")
def chromium_path() -> Path:
    return find_chromium()


@pytest.fixture(scope="package")
def browser(chromium_path: Path) -> Iterator[Browser]:
    """One headless Chromium for the tests in this folder, closed after the last of them.

    Not for the whole session: while Playwright's sync API is open, asyncio sees its event loop
    as running in this thread, so every later `asyncio.run` (the MCP tests, anyio) would fail
    with "cannot be called from a running event loop". For the same reason a browser test must
    not run an event loop in its own thread."""
    with sync_playwright() as playwright:
        # Debian's binary by path: Playwright's own browser download is never used. Without the
        # sandbox, as Chromium refuses to start sandboxed as root (Playwright's default too).
        launched = playwright.chromium.launch(
            executable_path=str(chromium_path), headless=True, chromium_sandbox=False
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def new_context(
    browser: Browser, request: pytest.FixtureRequest, screenshot_dir: Path
) -> Iterator[Callable[[], BrowserContext]]:
    """`new_context()` opens a context with its own cookies and storage: one more operator.
    Every context opened is closed at the end of the test; when the test failed, each of its
    open pages is first saved as screenshots/failures/<test>-<context>-<page>.png."""
    opened: list[BrowserContext] = []

    def open_context() -> BrowserContext:
        context = browser.new_context(viewport=VIEWPORT)
        context.set_default_timeout(ACTION_TIMEOUT_MS)
        opened.append(context)
        return context

    yield open_context
    if request.node.stash.get(_CALL_FAILED, False):
        _photograph_pages(opened, request.node.name, screenshot_dir / "failures")
    for context in opened:
        context.close()


def _photograph_pages(contexts: list[BrowserContext], test_name: str, folder: Path) -> None:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", test_name).strip("._") or "test"
    for c, context in enumerate(contexts, start=1):
        for p, page in enumerate(context.pages, start=1):
            try:
                save_screenshot(page, f"{stem}-{c}-{p}", folder)
            except PlaywrightError:
                pass  # a crashed page has no picture; the test's own failure says what happened


@pytest.fixture
def page(new_context: Callable[[], BrowserContext]) -> Page:
    return new_context().new_page()


@pytest.fixture
def console_command() -> ConsoleCommand:
    return proctor_console_command


@pytest.fixture
def console_args() -> Sequence[str]:
    """Extra options for the `console` fixture; override it in a module or parametrize it."""
    return ()


@pytest.fixture
def start_console(
    console_command: ConsoleCommand, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., ConsoleProcess]]:
    """`start_console(*extra_args, state_dir=None, policy_path=None)`: a console on a fresh
    state dir and policy copy unless given (pass another console's to share its stores).
    Each one is stopped at the end and must exit cleanly on SIGTERM."""
    started: list[ConsoleProcess] = []

    def start(
        *extra_args: str, state_dir: Path | None = None, policy_path: Path | None = None
    ) -> ConsoleProcess:
        root = tmp_path_factory.mktemp("console")
        if state_dir is None:
            state_dir = root / "state"
        if policy_path is None:
            policy_path = root / "policy.yaml"
            shutil.copyfile(SHIPPED_POLICY, policy_path)
        token = secrets.token_urlsafe(24)
        command = console_command(
            token=token, state_dir=state_dir, policy_path=policy_path, extra_args=extra_args
        )
        console = start_console_process(
            command, token=token, state_dir=state_dir, policy_path=policy_path,
            workdir=root / "cwd",
        )  # fmt: skip
        started.append(console)
        return console

    yield start
    for console in started:
        if not console.stopped:
            console.stop()


@pytest.fixture
def console(
    start_console: Callable[..., ConsoleProcess], console_args: Sequence[str]
) -> ConsoleProcess:
    return start_console(*console_args)


@pytest.fixture
def login() -> Callable[[Page, ConsoleProcess, str], None]:
    return _login


@pytest.fixture
def screenshot_dir() -> Path:
    return SCREENSHOT_DIR


@pytest.fixture
def screenshot(screenshot_dir: Path) -> Callable[[Page, str], Path]:
    """`screenshot(page, name)` saves the whole page as reports/screenshots/<name>.png."""

    def take(page: Page, name: str) -> Path:
        return save_screenshot(page, name, screenshot_dir)

    return take
