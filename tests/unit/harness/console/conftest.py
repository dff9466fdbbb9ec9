"""A console over a fresh state dir and an editable copy of the shipped policy, in-process."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from harness.cli._options import shipped_policy_path
from harness.console import ConsoleConfig, ConsoleState, create_app

TOKEN = "test-token-0123456789abcdef"
ORIGIN = "http://127.0.0.1:8765"


@pytest.fixture
def console_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ConsoleState]:
    monkeypatch.delenv("PROCTOR_AUDIT_KEY", raising=False)
    policy = tmp_path / "policy.yaml"
    shutil.copyfile(shipped_policy_path(), policy)
    config = ConsoleConfig(state_dir=tmp_path / "state", token=TOKEN, policy_path=policy)
    with ConsoleState(config) as state:
        yield state


@pytest.fixture
def client(console_state: ConsoleState) -> Iterator[TestClient]:
    app = create_app(console_state)
    with TestClient(app, base_url=ORIGIN, follow_redirects=False) as c:
        yield c


def sign_in(client: TestClient, operator: str = "ann") -> str:
    """Sign `client` in as `operator`; the session's CSRF value (read from a page)."""
    response = client.post(
        "/login",
        data={"token": TOKEN, "operator": operator, "next": "/"},
        headers={"Origin": ORIGIN},
    )
    assert response.status_code == 303, response.text
    page = client.get("/login")  # any page carries the session's CSRF value in its meta tag
    found = re.search(r'<meta name="csrf-token" content="([^"]*)">', page.text)
    assert found is not None and found.group(1)
    return found.group(1)
