"""`proctor console` as a user starts it: the refusals before anything opens, the one line it
prints, and a clean stop on SIGTERM."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import _exit_codes as codes
from harness.cli._app import cli

TOKEN = "console-token-0123456789"


def _invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["console", *args])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--host", "0.0.0.0"], "--allow-remote"),
        (["--host", "0.0.0.0", "--allow-remote"], "explicit --token"),
        (["--token", "short"], "at least 16 characters"),
        (["--provider", "script"], "--script FILE goes with --provider script"),
    ],
)
def test_unsafe_or_incomplete_options_are_refused_before_anything_opens(
    tmp_path: Path, args: list[str], says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PROCTOR_CONSOLE_TOKEN", raising=False)
    code, output = _invoke([*args, "--state-dir", str(tmp_path / "state"), "--port", "0"])
    assert code == codes.USAGE
    assert says in output
    assert not (tmp_path / "state").exists()


@pytest.fixture
def taken_port() -> Iterator[int]:
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    try:
        yield holder.getsockname()[1]
    finally:
        holder.close()


def test_a_taken_port_exits_69_naming_the_port_and_the_flag(
    tmp_path: Path, taken_port: int
) -> None:
    code, output = _invoke(
        ["--state-dir", str(tmp_path / "state"), "--port", str(taken_port), "--token", TOKEN]
    )
    assert code == codes.UNAVAILABLE
    errors = [line for line in output.splitlines() if line.startswith("error")]
    assert len(errors) == 1
    assert f"127.0.0.1:{taken_port}: the port is already in use" in errors[0]


@pytest.mark.slow
def test_the_console_prints_its_sign_in_url_serves_it_and_stops_cleanly_on_sigterm(
    tmp_path: Path,
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "console", "--port", "0", "--token", TOKEN,
         "--state-dir", str(tmp_path / "state")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("Proctor console: http://127.0.0.1:"), line
        url = line.split(": ", 1)[1].strip()
        assert url.endswith(f"/login?token={TOKEN}")
        with urllib.request.urlopen(url, timeout=10) as response:
            page = response.read().decode()
        assert response.status == 200 and "Sign in" in page
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert out == ""  # the URL line was the only thing on stdout
    assert "Proctor console stopped." in err
    assert "Traceback" not in err
