"""Shared fixtures: a real governed environment (built-in tools, shipped policy, SQLite stores)."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from governance import ManualClock
from governance._gateway import Gateway
from harness._check_cache import CACHE_ENV, KEY_ENV
from tests.postgres_cluster import PostgresCluster, running_cluster, unavailable

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


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """One throwaway PostgreSQL server for the session, started on first use (tests that never
    ask for it never pay for it); skipped locally when the server is not installed."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        unavailable("the psycopg driver is not installed (pip install -e '.[dev]')")
    with running_cluster() as cluster:
        yield cluster


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> str:
    """A fresh, empty database on the session's server, for one test."""
    return postgres_cluster.create_database()
