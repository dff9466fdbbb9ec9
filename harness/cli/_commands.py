"""Attaches every command module to the group; one line per command."""

from __future__ import annotations
