"""Helpers of the generator's tests, which run against the real `agentdojo` package (the
optional extra).

Without it they skip with the install line; with `PROCTOR_REQUIRE_AGENTDOJO=1` (set by CI) they
fail instead, so CI can never go green by quietly not running them.
"""

from __future__ import annotations

import os
from importlib.util import find_spec

import pytest
from click.testing import CliRunner

from harness.cli._app import cli

INSTALL_COMMAND = "pip install 'proctor[agentdojo]'"
REQUIRE_ENV = "PROCTOR_REQUIRE_AGENTDOJO"
VERSION = "v1.2.2"


def require_agentdojo() -> None:
    """Skip (locally) or fail (CI) when agentdojo is not installed."""
    if find_spec("agentdojo") is not None:
        return
    why = "agentdojo is not installed (the optional `agentdojo` extra)"
    if os.environ.get(REQUIRE_ENV, "") not in ("", "0"):
        pytest.fail(f"{why} ({REQUIRE_ENV} is set, so this is a failure, not a skip)")
    pytest.skip(f"{why}; install it with `{INSTALL_COMMAND}`")


def run_import(*args: str) -> tuple[int, str, str]:
    """`proctor import agentdojo ARGS` in this process: exit code, stdout, stderr."""
    result = CliRunner().invoke(cli, ["import", "agentdojo", *args])
    return result.exit_code, result.stdout, result.stderr
