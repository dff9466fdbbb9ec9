"""The `proctor` command line: a click group with one thin module per command."""

from __future__ import annotations

from harness.cli._app import cli, main

__all__ = ["cli", "main"]
