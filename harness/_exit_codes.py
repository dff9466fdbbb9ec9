"""Exit codes of the `proctor` CLI: a public contract (DESIGN.md), each one tested."""

from __future__ import annotations

from typing import Final

OK: Final = 0
CHECK_FAILED: Final = 1
REGRESSED: Final = 2
INVALID_SUITE: Final = 3
USAGE: Final = 64
UNAVAILABLE: Final = 69  # EX_UNAVAILABLE: cannot listen on host:port, or reach the store server
INTERNAL: Final = 70
SKIPPED: Final = 77
