"""Shared fixtures: a real governed environment (built-in tools, shipped policy, SQLite stores)."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from governance import ManualClock
from governance._gateway import Gateway

SHIPPED_POLICY = Path(str(resources.files("governance") / "data" / "default_policy.yaml"))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def governed(tmp_path: Path, clock: ManualClock) -> Iterator[Gateway]:
    with Gateway(state_dir=tmp_path / "state", policy_path=SHIPPED_POLICY, clock=clock) as gateway:
        yield gateway
