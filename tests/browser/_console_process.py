"""Start a console server as a child process, read its one announced URL, stop it.

The console prints exactly one line to stdout when it listens:
`Proctor console: http://HOST:PORT/login?token=TOKEN` (flushed; nothing here sets
PYTHONUNBUFFERED, so a console that forgets to flush fails these tests instead of passing them
by accident). Its stdout and stderr go to files, never to pipes: a server that logs more than a
pipe holds would block on a pipe nobody reads, and a file is still there to quote when it fails.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn
from urllib.parse import urljoin

import pytest

ANNOUNCEMENT = re.compile(
    r"^Proctor console: (?P<base>http://[^/\s]+)/login\?token=(?P<token>[^\s&]+)$"
)
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
_POLL_SECONDS = 0.05


@dataclass
class ConsoleProcess:
    """A running console: where it listens, with what token, on which state and policy."""

    base_url: str
    token: str
    state_dir: Path
    policy_path: Path
    process: subprocess.Popen[bytes]
    command: tuple[str, ...]
    stdout_path: Path
    stderr_path: Path
    stopped: bool = field(default=False)

    @property
    def login_url(self) -> str:
        return f"{self.base_url}/login?token={self.token}"

    def url(self, path: str) -> str:
        """An absolute URL on this console (`path` like "/approvals")."""
        return urljoin(self.base_url + "/", path.lstrip("/"))

    def stderr(self) -> str:
        return _read(self.stderr_path)

    def stop(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM and wait; fail (after SIGKILL) if it does not exit in time or exits with an
        error. Returns the exit code. Calling it twice is harmless."""
        self.stopped = True
        if self.process.poll() is not None:
            _fail(self, f"it exited by itself with code {self.process.returncode} during the test")
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=timeout)
            _fail(self, f"it did not exit within {timeout:g}s of SIGTERM and was killed")
        return _check_clean_exit(self, "on SIGTERM")

    def kill(self) -> None:
        """SIGKILL, as a crash would; the test that does this expects no clean exit."""
        self.stopped = True
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=STOP_TIMEOUT)


def start_console_process(
    command: Sequence[str],
    *,
    token: str,
    state_dir: Path,
    policy_path: Path,
    workdir: Path,
    timeout: float = START_TIMEOUT,
) -> ConsoleProcess:
    """Start `command` in `workdir` and wait for its announcement line; fail with its stderr
    when it exits first, announces something else, or says nothing within `timeout` seconds."""
    workdir.mkdir(parents=True, exist_ok=True)
    stdout_path = workdir / "console.stdout"
    stderr_path = workdir / "console.stderr"
    env = {k: v for k, v in os.environ.items() if k != "PROCTOR_CONSOLE_TOKEN"}
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        process = subprocess.Popen(
            list(command), cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err
        )
    console = ConsoleProcess(
        base_url="",
        token=token,
        state_dir=state_dir,
        policy_path=policy_path,
        process=process,
        command=tuple(command),
        stdout_path=stdout_path,
        stderr_path=stderr_path,
    )
    try:
        console.base_url = _wait_for_announcement(console, timeout)
    except BaseException:
        console.kill()
        raise
    return console


def _wait_for_announcement(console: ConsoleProcess, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while True:
        first_line, complete = _first_line(console.stdout_path)
        if complete:
            found = ANNOUNCEMENT.match(first_line)
            if found is None:
                _fail(console, f"its first stdout line is not the announcement: {first_line!r}")
            if found["token"] != console.token:
                _fail(console, f"it announced token {found['token']!r}, not the one it was given")
            return found["base"]
        if time.monotonic() > deadline:
            _fail(console, f"it printed no announcement within {timeout:g}s")
        try:
            code = console.process.wait(timeout=_POLL_SECONDS)
        except subprocess.TimeoutExpired:
            continue
        _fail(console, f"it exited with code {code} before announcing its URL")


def _first_line(path: Path) -> tuple[str, bool]:
    text = _read(path)
    line, newline, _ = text.partition("\n")
    return line.rstrip("\r"), bool(newline)


def _check_clean_exit(console: ConsoleProcess, when: str) -> int:
    code = console.process.returncode
    if code not in (0, -signal.SIGTERM):
        _fail(console, f"it exited with code {code} {when}")
    return code


def _fail(console: ConsoleProcess, why: str) -> NoReturn:
    command = " ".join(console.command)
    pytest.fail(
        f"the console ({command}) failed: {why}\n"
        f"--- stdout ---\n{_read(console.stdout_path)}\n"
        f"--- stderr ---\n{console.stderr()}",
        pytrace=False,
    )


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
