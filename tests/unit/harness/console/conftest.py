"""A policy file the editor owns, a real gateway reading it, and an editor over both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from governance import Gateway
from governance.stores import MemoryAuditLog
from governance.tools import builtin_registry
from harness.console._policy_edit import PolicyEditor
from tests.unit.harness.console.policy_editing import POLICY


@pytest.fixture
def policy_path(tmp_path: Path) -> Path:
    path = tmp_path / "policies" / "team.yaml"
    path.parent.mkdir()
    path.write_text(POLICY, encoding="utf-8")
    return path


@pytest.fixture
def audit() -> MemoryAuditLog:
    return MemoryAuditLog()


@pytest.fixture
def editor(policy_path: Path, audit: MemoryAuditLog) -> PolicyEditor:
    """An editor over the built-in tools, auditing into `audit`."""
    return PolicyEditor(policy_path=policy_path, registry=builtin_registry(), audit=audit)


@pytest.fixture
def gateway(tmp_path: Path, policy_path: Path) -> Iterator[Gateway]:
    with Gateway(
        state_dir=tmp_path / "state", policy_path=policy_path, audit_key_from_env=False
    ) as gateway:
        yield gateway
