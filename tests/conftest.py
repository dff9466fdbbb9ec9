"""Shared fixtures: a real governed environment (built-in tools, shipped policy, SQLite audit)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pytest

from governance import AuditLog, Firewall, PolicyFile, ToolRegistry
from governance.tools import builtin_tools

SHIPPED_POLICY = Path(str(resources.files("governance") / "data" / "default_policy.yaml"))


@dataclass
class Governed:
    workspace: Path
    audit: AuditLog
    firewall: Firewall


@pytest.fixture
def governed(tmp_path: Path) -> Iterator[Governed]:
    workspace = tmp_path / "workspace"
    with AuditLog(tmp_path / "audit.sqlite") as audit:
        firewall = Firewall(
            ToolRegistry([builtin_tools(workspace)]), PolicyFile(SHIPPED_POLICY), audit
        )
        yield Governed(workspace, audit, firewall)
