"""Running `proctor` commands against a console's state dir, as another terminal would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
