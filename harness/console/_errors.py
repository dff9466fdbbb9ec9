"""The console's own failures."""

from __future__ import annotations

from harness._errors import HarnessError


class ConsoleStartError(HarnessError):
    """The console could not start serving (the message says why and what to change)."""
