"""Helpers of the generator's tests, which run against the real `agentdojo` package (the
optional extra): without it they skip, or fail under `PROCTOR_REQUIRE_AGENTDOJO=1`
(tests/agentdojo_support.py)."""

from __future__ import annotations

from click.testing import CliRunner

from harness.cli._app import cli
from tests.agentdojo_support import require_agentdojo

INSTALL_COMMAND = "pip install 'proctor[agentdojo]'"  # what the command tells a user
VERSION = "v1.2.2"
__all__ = ["INSTALL_COMMAND", "VERSION", "require_agentdojo", "run_import"]


def run_import(*args: str) -> tuple[int, str, str]:
    """`proctor import agentdojo ARGS` in this process: exit code, stdout, stderr."""
    result = CliRunner().invoke(cli, ["import", "agentdojo", *args])
    return result.exit_code, result.stdout, result.stderr
