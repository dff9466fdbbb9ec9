"""`proctor console`: a live web page over the same gateway and stores as the CLI.

Agent turns that wait on a held call and resume by themselves, approvals, the policy editor,
budgets, the audit log and evaluation reports, served by Starlette on loopback. Loaded only by
the `console` command (starlette, uvicorn and jinja2 stay out of `proctor --help`).
"""

from __future__ import annotations

from harness.console._app import create_app
from harness.console._config import ConsoleConfig
from harness.console._state import ConsoleState

__all__ = ["ConsoleConfig", "ConsoleState", "create_app"]
