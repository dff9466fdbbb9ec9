"""The CLI as a user runs it: a real subprocess, real exit codes."""

import subprocess
import sys
from pathlib import Path


def _proctor(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        check=False,
    )


def test_python_dash_m_harness_prints_help_with_the_exit_codes() -> None:
    done = _proctor("--help")
    assert done.returncode == 0
    assert "77  live smoke skipped" in done.stdout


def test_a_bad_flag_exits_64_not_clicks_2() -> None:
    done = _proctor("--no-such-flag")
    assert done.returncode == 64
    assert "No such option" in done.stderr


def test_a_malformed_policy_exits_3_naming_file_and_line(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("version: 1\ndefaults: {unknown_tool: allow, no_match: block}\nrules: []\n")
    done = _proctor("policy", "check", str(policy))
    assert done.returncode == 3
    assert f"{policy}:2:" in done.stderr


def test_the_demo_detects_the_tampered_event(tmp_path: Path) -> None:
    done = _proctor("demo", "--workspace", str(tmp_path / "ws"))
    assert done.returncode == 0, done.stderr
    assert "tamper detected at the exact seq." in done.stdout
    assert "shell.exec" in done.stdout and "unknown_tool" in done.stdout
