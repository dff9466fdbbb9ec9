"""A destructive MCP tool whose call times out, or whose server is killed mid-call, keeps its
budget slot: the request may have landed. Real stdio servers, a real gateway and real stores."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from governance import ManualClock, Principal, ToolCall
from governance._firewall import LifecycleEvent
from governance._gateway import Gateway

pytestmark = pytest.mark.slow

POLICY = """\
version: 1
rules:
  - id: ops
    effect: allow
    match: {namespace: mcp.ops}
budgets:
  - id: one-per-run
    scope: agent_run
    limit: 1
    window_seconds: 3600
"""
DESTRUCTIVE = (
    "{action_type: destructive, risk: high, reversible: false, external_side_effect: true}"
)
# A server whose `hang` tool notes it was reached (the effect has landed), then never answers.
SERVER = """\
import sys, time
from pathlib import Path
from mcp.server.mcpserver import MCPServer

server = MCPServer("ops", version="1.0")

@server.tool(name="hang", description="Wipe the target, then take forever to say so.")
def hang(target: str) -> str:
    Path(sys.argv[1], target).write_text("landed")
    time.sleep(600)
    return "done"

@server.tool(name="wipe", description="Wipe the target.")
def wipe(target: str) -> str:
    Path(sys.argv[1], target).write_text("landed")
    return "wiped"

server.run("stdio")
"""
ANN = Principal("ann", "agent-1", "ops")


def _gateway(root: Path, *, call_timeout: float) -> Gateway:
    effects = root / "effects"
    effects.mkdir(exist_ok=True)
    script = root / "ops_server.py"
    script.write_text(SERVER, encoding="utf-8")
    config = root / "ops.yaml"
    config.write_text(
        f"""\
version: 1
servers:
  ops:
    transport: stdio
    command: {sys.executable}
    args: ["{script}", "{effects}"]
    call_timeout: {call_timeout}
    pin: false
    tools:
      hang: {DESTRUCTIVE}
      wipe: {DESTRUCTIVE}
""",
        encoding="utf-8",
    )
    policy = root / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    gateway = Gateway(
        state_dir=root / "state",
        policy_path=policy,
        clock=ManualClock(),
        builtin=False,
        mcp_config=config,
    )
    (source,) = gateway.mcp_sources
    assert source.status.state == "up", source.status.describe()
    return gateway


def _call(n: int, tool: str, target: str) -> ToolCall:
    return ToolCall(f"c{n}", f"mcp.ops.{tool}", {"target": target}, "run-1", ANN)


def _assert_slot_kept(gateway: Gateway, effects: Path, reason: str) -> None:
    second = gateway.firewall.call(_call(2, "wipe", "second"))
    assert (second.outcome, second.reason) == ("blocked", "budget_exhausted:agent_run")
    assert not (effects / "second").exists()
    assert [row.status for row in gateway.budgets.ledger("one-per-run")] == ["unknown"]
    failed = [dict(e.data) for e in gateway.audit.events("run-1") if e.kind == "execution.failed"]
    assert [(f["reason"], f["effect"]) for f in failed] == [(reason, "unknown")]


def test_a_destructive_mcp_call_that_times_out_keeps_its_budget_slot(tmp_path: Path) -> None:
    with _gateway(tmp_path, call_timeout=1) as gateway:
        first = gateway.firewall.call(_call(1, "hang", "first"))
        assert (first.outcome, first.reason) == ("failed", "timeout"), first.error
        assert (tmp_path / "effects" / "first").exists()  # it did land
        _assert_slot_kept(gateway, tmp_path / "effects", "timeout")


def test_a_destructive_mcp_call_whose_server_is_killed_mid_call_keeps_its_budget_slot(
    tmp_path: Path,
) -> None:
    effects = tmp_path / "effects"
    with _gateway(tmp_path, call_timeout=120) as gateway:
        (source,) = gateway.mcp_sources
        pid = source.pid
        assert pid is not None
        killed = threading.Event()

        def kill_once_the_call_is_in_the_server() -> None:
            deadline = time.monotonic() + 60
            while not (effects / "first").exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            os.kill(pid, signal.SIGKILL)
            killed.set()

        def start_killer(event: LifecycleEvent) -> None:
            if event.kind == "execution.started" and event.call_id == "c1":
                threading.Thread(target=kill_once_the_call_is_in_the_server, daemon=True).start()

        gateway.firewall.add_observer(start_killer)
        first = gateway.firewall.call(_call(1, "hang", "first"))
        assert killed.is_set()
        assert (first.outcome, first.reason) == ("failed", "connection_lost"), first.error
        assert (effects / "first").exists()
        _assert_slot_kept(gateway, effects, "connection_lost")


def test_an_mcp_call_refused_before_dispatch_releases_its_slot(tmp_path: Path) -> None:
    effects = tmp_path / "effects"
    with _gateway(tmp_path, call_timeout=30) as gateway:
        bad = ToolCall("c1", "mcp.ops.wipe", {"target": 7}, "run-1", ANN)
        assert gateway.firewall.call(bad).reason == "invalid_arguments"
        ok: Any = gateway.firewall.call(_call(2, "wipe", "second"))
        assert ok.outcome == "executed", ok.error
        assert (effects / "second").exists()
        assert [row.status for row in gateway.budgets.ledger("one-per-run")] == ["executed"]
