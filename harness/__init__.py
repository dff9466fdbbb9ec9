"""Proctor's evaluation harness: agent loop, providers, scenarios, traces, gate and CLI."""

from __future__ import annotations

__all__: list[str] = []
