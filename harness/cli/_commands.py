"""Attaches every command module to the group; one line per command."""

from __future__ import annotations

from harness.cli import (
    _approvals,  # noqa: F401
    _ask,  # noqa: F401
    _audit,  # noqa: F401
    _baseline_cmd,  # noqa: F401
    _budgets,  # noqa: F401
    _check,  # noqa: F401
    _demo,  # noqa: F401
    _mcp,  # noqa: F401
    _mutate,  # noqa: F401
    _policy,  # noqa: F401
    _run,  # noqa: F401
    _score,  # noqa: F401
    _serve,  # noqa: F401
    _smoke,  # noqa: F401
    _stub,  # noqa: F401
)
