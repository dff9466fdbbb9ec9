"""Attaches every command module to the group; one line per command."""

from __future__ import annotations

from harness.cli import (
    _audit,  # noqa: F401
    _demo,  # noqa: F401
    _policy,  # noqa: F401
)
