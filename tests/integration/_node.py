"""Node-based peers for the MCP tests: find node and the pinned npm packages, run them, stop them.

The packages live in `.ci/npm/node_modules` (git-ignored), installed by `.ci/run` with
`npm ci --prefix .ci/npm --no-audit --no-fund`. Locally, a missing node or package skips the
test with the command to run; with `PROCTOR_REQUIRE_NODE=1` (set by `.ci/run`) it fails
instead, so CI can never go green by quietly not running these tests.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[2]
NPM_DIR = ROOT / ".ci" / "npm"
NODE_MODULES = NPM_DIR / "node_modules"
INSTALL_COMMAND = "npm ci --prefix .ci/npm --no-audit --no-fund"
REQUIRE_ENV = "PROCTOR_REQUIRE_NODE"
EVERYTHING = "@modelcontextprotocol/server-everything"
CONFORMANCE = "@modelcontextprotocol/conformance"
_POLL_SECONDS = 0.05


def node_required() -> bool:
    """Whether a missing node or package must fail the test (CI) rather than skip it."""
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0")


def _unavailable(why: str) -> NoReturn:
    if node_required():
        pytest.fail(f"{why} ({REQUIRE_ENV} is set, so this is a failure, not a skip)")
    pytest.skip(f"{why}; install them with `{INSTALL_COMMAND}` from the repository root")


def node_executable() -> str:
    """The absolute path of `node` on PATH, or skip/fail."""
    found = shutil.which("node")
    if found is None:
        _unavailable("node is not on PATH (Node.js 20+ and npm run the MCP peers)")
    return found


def package_entry(package: str, entry: str = "dist/index.js") -> Path:
    """The installed package's entry script, or skip/fail naming the install command."""
    script = NODE_MODULES / package / entry
    if not script.is_file():
        _unavailable(f"{package} is not installed in {NODE_MODULES.relative_to(ROOT)}")
    return script


def node_command(package: str, *args: str) -> list[str]:
    """`[node, <package entry>, *args]` with both resolved to absolute paths."""
    return [node_executable(), str(package_entry(package)), *args]


def free_port() -> int:
    """A port that was free a moment ago on 127.0.0.1 (for servers that cannot take port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(proc: subprocess.Popen[bytes], port: int, timeout: float = 20.0) -> None:
    """Return once 127.0.0.1:`port` accepts a connection; fail if `proc` exits or time runs out.

    Between attempts it waits on the process itself, so an early exit ends the wait at once.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"nothing listened on 127.0.0.1:{port} within {timeout:g}s")
        try:
            code = proc.wait(timeout=_POLL_SECONDS)
        except subprocess.TimeoutExpired:
            continue
        pytest.fail(f"the server exited with code {code} before it listened on port {port}")


def stop(proc: subprocess.Popen[bytes] | subprocess.Popen[str], grace: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds; always reaped. Safe on an exited process."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=grace)


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without PROCTOR_* settings, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROCTOR_")}
    env.update(extra)
    return env
