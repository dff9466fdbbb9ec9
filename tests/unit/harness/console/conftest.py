"""Console fixtures: an agent engine over a real gateway (built-in tools, shipped policy, SQLite
stores, held calls awaited by this process) driven by replay scripts; and a whole console app
(in-process, TestClient) over a fresh state dir and an editable copy of the shipped policy; a
policy file the editor owns, a real gateway reading it, and an editor over both."""

from __future__ import annotations

import itertools
import re
import shutil
import time
from collections.abc import Callable, Collection, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from governance import Gateway, ManualClock
from governance.stores import MemoryAuditLog
from governance.tools import builtin_registry
from harness._run_store import RunStore
from harness.cli._options import shipped_policy_path
from harness.console import ConsoleConfig, ConsoleState, create_app
from harness.console._live import EventHub
from harness.console._policy_edit import PolicyEditor
from harness.console._providers import ProviderFactory, ScriptProviders
from harness.console._sessions import AgentSessions
from tests.unit.harness.console.policy_editing import POLICY

SHIPPED_POLICY = Path(str(resources.files("governance") / "data" / "default_policy.yaml"))
BOUND = 60.0  # seconds: a bound on waiting for a turn, never a measured duration

EMAIL = {"tool": "email.send", "args": {"to": "cfo@example.com", "subject": "Q3", "body": "hi"}}
EMAIL_SCRIPT: list[Any] = [
    {"calls": [EMAIL]},
    {
        "branch": {
            "executed": [{"answer": "Sent as message {{tool:email.send#outbox_id}}."}],
            "blocked": [{"answer": "I could not send it."}],
        }
    },
]


class Console:
    """What a console process holds: one awaited gateway, one hub, the sessions."""

    def __init__(self, state_dir: Path, clock: ManualClock | None) -> None:
        self.state_dir = state_dir
        self.gateway = Gateway(
            state_dir=state_dir, policy_path=SHIPPED_POLICY, clock=clock, held_calls="awaited"
        )
        self.hub = EventHub()
        self._ids = itertools.count(1)
        self.sessions: AgentSessions | None = None

    def open(self, factory: ProviderFactory | list[Any], *, prefix: str = "run") -> AgentSessions:
        provider = ScriptProviders(factory) if isinstance(factory, list) else factory
        self.sessions = AgentSessions(
            self.gateway,
            self.hub,
            RunStore(self.state_dir),
            provider,
            new_run_id=lambda: f"{prefix}-{next(self._ids)}",
        )
        return self.sessions

    def close(self) -> None:
        if self.sessions is not None:
            self.sessions.close()
        self.gateway.close()


def wait_for(
    console: Console, run_id: str, statuses: Collection[str], *, timeout: float = BOUND
) -> dict[str, Any]:
    """The run's view once its status is one of `statuses`, waiting on the hub (bounded)."""
    assert console.sessions is not None
    deadline = time.monotonic() + timeout
    while True:
        view = console.sessions.view(run_id)
        if view["status"] in statuses:
            return view
        left = deadline - time.monotonic()
        assert left > 0, f"{run_id} is still {view['status']}, not {sorted(statuses)}"
        console.hub.wait_after(view["hub_id"], left)


@pytest.fixture
def make_console(tmp_path: Path) -> Iterator[Callable[..., Console]]:
    opened: list[Console] = []

    def make(clock: ManualClock | None = None, state_dir: Path | None = None) -> Console:
        console = Console(state_dir or tmp_path / "state", clock)
        opened.append(console)
        return console

    yield make
    for console in reversed(opened):
        console.close()


@pytest.fixture
def console(make_console: Callable[..., Console], clock: ManualClock) -> Console:
    return make_console(clock)


TOKEN = "test-token-0123456789abcdef"
ORIGIN = "http://127.0.0.1:8765"


@pytest.fixture
def console_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ConsoleState]:
    monkeypatch.delenv("PROCTOR_AUDIT_KEY", raising=False)
    policy = tmp_path / "policy.yaml"
    shutil.copyfile(shipped_policy_path(), policy)
    config = ConsoleConfig(state_dir=tmp_path / "state", token=TOKEN, policy_path=policy)
    with ConsoleState(config, providers=ScriptProviders(EMAIL_SCRIPT)) as state:
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
