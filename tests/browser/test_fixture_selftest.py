"""The browser-test fixtures work, proven against a fake console before the real one exists.

`console_command` is swapped for the fake in fixture_selftest_fake_console.py, with exactly
the arguments the real `proctor console` gets; everything else is the fixtures as the console
tests use them: a real Chromium, a real server process, real cookies.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import BrowserContext, Page

from tests.browser._console_command import (
    SHIPPED_POLICY,
    ConsoleCommand,
    proctor_console_command,
)
from tests.browser._console_process import ConsoleProcess, start_console_process
from tests.browser._pages import save_screenshot

pytestmark = pytest.mark.browser

FAKE_CONSOLE = Path(__file__).with_name("fixture_selftest_fake_console.py")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def fake_console_command(
    *, token: str, state_dir: Path, policy_path: Path, extra_args: Sequence[str]
) -> list[str]:
    """The real command line with `-m harness` swapped for the fake's script."""
    real = proctor_console_command(
        token=token, state_dir=state_dir, policy_path=policy_path, extra_args=extra_args
    )
    assert real[:3] == [sys.executable, "-m", "harness"]
    return [sys.executable, str(FAKE_CONSOLE), *real[3:]]


@pytest.fixture
def console_command() -> ConsoleCommand:
    return fake_console_command


@pytest.fixture
def screenshot_dir(tmp_path: Path) -> Path:
    return tmp_path / "reports" / "screenshots"  # not created yet


def test_login_reaches_a_page_behind_the_login_and_a_screenshot_is_a_png(
    page: Page,
    console: ConsoleProcess,
    login: Callable[[Page, ConsoleProcess, str], None],
    screenshot: Callable[[Page, str], Path],
    screenshot_dir: Path,
) -> None:
    login(page, console, "alice")

    assert urlparse(page.url).path == "/"
    assert page.locator("#operator").inner_text() == "alice"
    path = screenshot(page, "fixture-selftest-login")
    assert path == screenshot_dir / "fixture-selftest-login.png"
    assert path.read_bytes().startswith(PNG_SIGNATURE)


def test_the_console_gets_a_temporary_state_dir_and_a_writable_copy_of_the_policy(
    console: ConsoleProcess,
) -> None:
    assert console.policy_path != SHIPPED_POLICY
    assert console.policy_path.read_bytes() == SHIPPED_POLICY.read_bytes()
    console.policy_path.write_text("rules: []\n", encoding="utf-8")
    assert SHIPPED_POLICY.read_text(encoding="utf-8") != "rules: []\n"
    assert not console.state_dir.is_relative_to(Path(__file__).resolve().parents[2])


def test_two_contexts_are_two_operators_with_separate_cookies(
    new_context: Callable[[], BrowserContext],
    console: ConsoleProcess,
    login: Callable[[Page, ConsoleProcess, str], None],
) -> None:
    alice_context, bob_context, stranger_context = new_context(), new_context(), new_context()
    alice, bob, stranger = (c.new_page() for c in (alice_context, bob_context, stranger_context))

    login(alice, console, "alice")
    login(bob, console, "bob")
    stranger.goto(console.url("/"))

    alice.reload()
    assert alice.locator("#operator").inner_text() == "alice"
    assert bob.locator("#operator").inner_text() == "bob"
    alice_cookies = {c["value"] for c in alice_context.cookies()}
    bob_cookies = {c["value"] for c in bob_context.cookies()}
    assert alice_cookies and bob_cookies and not alice_cookies & bob_cookies
    assert stranger_context.cookies() == []
    assert urlparse(stranger.url).path == "/login"


def test_a_refused_login_fails_with_the_page_text(
    page: Page, console: ConsoleProcess, login: Callable[[Page, ConsoleProcess, str], None]
) -> None:
    with pytest.raises(pytest.fail.Exception, match=r"stayed on the login page:\s+refused"):
        login(page, console, "   ")  # the fake refuses a blank name, after the form's `required`


def test_a_console_that_exits_at_start_fails_with_its_stderr(
    start_console: Callable[..., ConsoleProcess],
) -> None:
    with pytest.raises(pytest.fail.Exception) as failed:
        start_console("--fail-at-start", "the state dir is on fire")

    message = str(failed.value)
    assert "exited with code 3 before announcing its URL" in message
    assert "the state dir is on fire" in message


def test_a_console_that_never_announces_fails_after_the_timeout_and_is_killed(
    tmp_path: Path,
) -> None:
    command = fake_console_command(
        token="t", state_dir=tmp_path / "s", policy_path=tmp_path / "p", extra_args=["--silent"]
    )
    with pytest.raises(pytest.fail.Exception, match="printed no announcement within 1s"):
        start_console_process(
            command, token="t", state_dir=tmp_path / "s", policy_path=tmp_path / "p",
            workdir=tmp_path / "cwd", timeout=1.0,
        )  # fmt: skip

    assert _fake_consoles_running_in(tmp_path / "cwd") == []


def test_a_token_that_starts_with_a_dash_reaches_the_console_as_a_value(tmp_path: Path) -> None:
    token = "-starts-like-an-option"
    command = fake_console_command(
        token=token, state_dir=tmp_path / "s", policy_path=tmp_path / "p", extra_args=[]
    )
    console = start_console_process(
        command, token=token, state_dir=tmp_path / "s", policy_path=tmp_path / "p",
        workdir=tmp_path / "cwd",
    )  # fmt: skip
    try:
        assert console.login_url.endswith("/login?token=-starts-like-an-option")
    finally:
        console.stop()


def test_a_console_announcing_another_token_fails(
    start_console: Callable[..., ConsoleProcess],
) -> None:
    with pytest.raises(pytest.fail.Exception, match="announced token 'other'"):
        start_console("--announce-token", "other")


def test_stop_ends_the_console_and_closes_its_port(
    start_console: Callable[..., ConsoleProcess],
) -> None:
    console = start_console()
    address = urlparse(console.base_url)
    assert address.hostname is not None and address.port is not None
    socket.create_connection((address.hostname, address.port), timeout=5).close()

    assert console.stop() == 0

    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((address.hostname, address.port), timeout=5)


def test_a_console_that_ignores_sigterm_is_killed_and_reported(
    start_console: Callable[..., ConsoleProcess],
) -> None:
    console = start_console("--ignore-sigterm")

    with pytest.raises(pytest.fail.Exception, match="did not exit within 1s of SIGTERM"):
        console.stop(timeout=1.0)

    assert console.process.returncode == -signal.SIGKILL


def test_a_console_that_dies_during_the_test_fails_when_stopped(
    start_console: Callable[..., ConsoleProcess],
) -> None:
    console = start_console()
    os.kill(console.process.pid, signal.SIGKILL)
    console.process.wait(timeout=10)

    with pytest.raises(pytest.fail.Exception, match="exited by itself with code -9"):
        console.stop()


@pytest.mark.parametrize("name", ["../escape", "a/b", "", ".hidden"])
def test_a_screenshot_name_cannot_leave_the_folder(page: Page, name: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="screenshot name"):
        save_screenshot(page, name, tmp_path)
    assert list(tmp_path.iterdir()) == []


def _fake_consoles_running_in(workdir: Path) -> list[int]:
    """Pids of live processes whose working directory is `workdir` (Linux /proc)."""
    running = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if Path(os.readlink(entry / "cwd")) == workdir:
                running.append(int(entry.name))
        except OSError:
            continue
    return running
