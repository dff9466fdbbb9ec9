"""Shared fixtures: a real governed environment (built-in tools, shipped policy, SQLite stores)."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from governance import ManualClock
from governance._gateway import Gateway
from harness._check_cache import CACHE_ENV, KEY_ENV

SHIPPED_POLICY = Path(str(resources.files("governance") / "data" / "default_policy.yaml"))


@pytest.fixture(autouse=True)
def _own_check_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test has its own scenario check cache and cache key (never the user's ~/.cache or
    ~/.config), empty at start; the CLI processes a test starts inherit them."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path_factory.mktemp("check-cache")))
    monkeypatch.setenv(KEY_ENV, str(tmp_path_factory.mktemp("check-cache-key") / "key"))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def governed(tmp_path: Path, clock: ManualClock) -> Iterator[Gateway]:
    with Gateway(state_dir=tmp_path / "state", policy_path=SHIPPED_POLICY, clock=clock) as gateway:
        yield gateway
