"""How the browser tests start `proctor console`: the one function to change if its CLI does."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Protocol

SHIPPED_POLICY = Path(str(resources.files("governance") / "data" / "default_policy.yaml"))


class ConsoleCommand(Protocol):
    def __call__(
        self, *, token: str, state_dir: Path, policy_path: Path, extra_args: Sequence[str]
    ) -> list[str]: ...


def proctor_console_command(
    *, token: str, state_dir: Path, policy_path: Path, extra_args: Sequence[str]
) -> list[str]:
    """`proctor console` on loopback, a port the OS picks, the given token, state and policy.

    `--token=VALUE` in one word: a random token may start with "-", which a parser would
    otherwise read as the next option."""
    return [
        sys.executable, "-m", "harness", "console",
        "--host", "127.0.0.1", "--port", "0", f"--token={token}",
        "--state-dir", str(state_dir), "--policy", str(policy_path),
        *extra_args,
    ]  # fmt: skip
