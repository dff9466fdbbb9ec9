"""A foreign MCP client reports no run state: the served session's taint comes from what the
firewall itself saw, so `tainted: true` rules hold for it as for the agent loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client

from governance._mcp_server import build_mcp_server
from tests.unit.governance.test_firewall_run_taint import Source, _gateway


def _texts(result: types.CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, types.TextContent))


def test_a_served_session_that_read_an_injection_cannot_send(tmp_path: Path) -> None:
    source = Source()

    async def session(server: Any, tools: list[str]) -> list[types.CallToolResult]:
        async with Client(server, mode="legacy") as client:
            return [await client.call_tool(tool, {}) for tool in tools]

    with _gateway(tmp_path, source) as gateway:
        server = build_mcp_server(gateway)
        tainted = anyio.run(session, server, ["demo.inbox", "demo.send"])
        clean = anyio.run(session, server, ["demo.notes", "demo.send"])
    read, send = tainted
    assert not read.is_error
    assert send.is_error and "blocked by rule tainted-sends" in _texts(send)
    assert send.meta is not None and send.meta["proctor"]["rule_ids"] == ["tainted-sends"]
    assert not clean[1].is_error
    assert len(source.sent) == 1  # only the clean session's send executed
