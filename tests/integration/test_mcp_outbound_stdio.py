"""`proctor serve --transport stdio` as a client launches it: a real subprocess, the SDK client."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from governance import AuditLog
from governance._gateway import Gateway
from governance.tools import outbox_rows

pytestmark = pytest.mark.slow

SHIPPED_POLICY = Path(str(resources.files("governance") / "data" / "default_policy.yaml"))
AUDIT_KEY = "stdio-test-key"
EMAIL = {"to": "ops@example.com", "subject": "quarterly", "body": "numbers attached"}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROCTOR_")}
    return {**env, "PROCTOR_AUDIT_KEY": AUDIT_KEY}


def _texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def _params(state_dir: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "harness", "serve", "--transport", "stdio", "--state-dir", str(state_dir)]
        + list(extra),
        env={"PROCTOR_AUDIT_KEY": AUDIT_KEY},  # on top of the SDK's minimal safe environment
    )


async def _with_session(
    state_dir: Path, errlog_path: Path, body: Any, *extra: str
) -> Any:
    with errlog_path.open("w", encoding="utf-8") as errlog:
        async with stdio_client(_params(state_dir, *extra), errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)


def test_a_stdio_client_gets_governed_tools_and_governed_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROCTOR_AUDIT_KEY", AUDIT_KEY)  # the reviewer below signs the same chain
    state_dir = tmp_path / "state"
    errlog = tmp_path / "server-stderr.log"
    seen: dict[str, Any] = {}

    async def body(session: ClientSession) -> None:
        listing = await session.list_tools()
        seen["tools"] = {tool.name: tool for tool in listing.tools}
        seen["lookup"] = await session.call_tool("orders.lookup", {"order_id": "ORD-0001"})
        seen["delete"] = await session.call_tool("fs.delete", {"path": "reports/q3.md"})
        seen["email"] = await session.call_tool("email.send", EMAIL)
        seen["unknown"] = await session.call_tool("shell.exec", {"cmd": "id"})
        approval_id = seen["email"].structured_content["approval_id"]
        # While the server runs: the request is pending and nothing left the building.
        with Gateway(state_dir=state_dir, policy_path=SHIPPED_POLICY) as reviewer:
            seen["pending"] = reviewer.approvals.get(approval_id).status
            seen["outbox_while_held"] = outbox_rows(reviewer.workspace)
            pending = reviewer.approvals.list(status="pending")
            seen["listed"] = [(r.id, r.tool, r.run_id, r.actor) for r in pending]
            reviewer.firewall.approve(approval_id, "reviewer-rita")
        seen["resumed"] = await session.call_tool(
            "proctor.resume_approved", {"approval_id": approval_id}
        )

    anyio.run(_with_session, state_dir, errlog, body)

    tools = seen["tools"]
    assert {"orders.lookup", "fs.delete", "email.send", "fs.read"} <= set(tools)
    email_tool = tools["email.send"]
    assert email_tool.input_schema["required"] == ["to", "subject", "body"]
    assert email_tool.meta["proctor"]["approval"] == "always"
    assert email_tool.meta["proctor"]["impact"] == "destructive"
    assert email_tool.description.startswith(
        "[proctor: action=external risk=high impact=destructive approval=always]"
    )
    assert all(t.meta and "proctor" in t.meta for t in tools.values())

    lookup = seen["lookup"]
    assert lookup.is_error is False and "ORD-0001" in _texts(lookup)[0]

    delete = seen["delete"]
    assert delete.is_error is True and "blocked_by_rule" in _texts(delete)[0]

    email = seen["email"]
    assert email.is_error is False
    assert email.structured_content["status"] == "waiting_approval"
    assert "Nothing was executed" in _texts(email)[0]
    approval_id = email.structured_content["approval_id"]
    assert seen["pending"] == "pending"
    assert seen["listed"] == [(approval_id, "email.send", "mcp-1", "mcp-user")]
    assert seen["outbox_while_held"] == []

    unknown = seen["unknown"]
    assert unknown.is_error is True and "unknown_tool" in _texts(unknown)[0]

    resumed = seen["resumed"]
    assert resumed.is_error is False and resumed.meta["proctor"]["outcome"] == "executed"

    with Gateway(state_dir=state_dir, policy_path=SHIPPED_POLICY) as after:
        assert [row["to_addr"] for row in outbox_rows(after.workspace)] == [EMAIL["to"]]
        assert (state_dir / "workspace" / "files" / "reports" / "q3.md").exists()
    with AuditLog(state_dir / "audit.sqlite", key=AUDIT_KEY.encode(), readonly=True) as audit:
        assert audit.run_ids() == ["mcp-1"]  # one session, one run
        verdicts = audit.verify_all()
        assert [v.ok for v in verdicts] == [True], verdicts
        assert verdicts[0].alg == "hmac-sha256"
        calls = [e.data["call_id"] for e in audit.events("mcp-1") if e.kind == "tool.requested"]
        assert calls == ["c1", "c2", "c3", "c4"]


def test_stdout_carries_only_protocol_and_a_restart_starts_a_new_run(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"

    async def one_call(session: ClientSession) -> types.CallToolResult:
        return await session.call_tool("fs.list", {})

    first = anyio.run(_with_session, state_dir, tmp_path / "e1.log", one_call)
    second = anyio.run(
        _with_session, state_dir, tmp_path / "e2.log", one_call, "--actor", "alice"
    )
    assert first.meta["proctor"]["run_id"] == "mcp-1"
    assert second.meta["proctor"]["run_id"] == "mcp-2"
    # The startup banner went to stderr; a stray line on stdout would have broken the session.
    assert "governed tools for actor 'alice'" in (tmp_path / "e2.log").read_text()
    with AuditLog(state_dir / "audit.sqlite", readonly=True) as audit:
        principal = audit.events("mcp-2")[0].data["principal"]
    assert principal == {"actor": "alice", "agent": "mcp-client", "team": "mcp"}


def test_the_stdio_server_exits_cleanly_when_the_client_closes_stdin(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness", "serve", "--state-dir", str(tmp_path / "s")],
        input="",
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # nothing but protocol, and there was no protocol
    assert "serving MCP over stdio" in done.stderr
