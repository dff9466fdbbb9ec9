"""`proctor serve --otel` as an MCP client launches it (stdio, the SDK client): each governed
call a client makes is exported, with its decision, and flushed when the client hangs up."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.otel_receiver import OtlpReceiver

pytestmark = pytest.mark.slow


def test_a_served_session_exports_each_governed_call_with_its_decision(tmp_path: Path) -> None:
    with OtlpReceiver(tmp_path) as receiver:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "harness", "serve", "--otel", "--state-dir", str(tmp_path / "state")],
            env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint},
        )

        async def session() -> None:
            with (tmp_path / "server-stderr.log").open("w", encoding="utf-8") as errlog:
                async with stdio_client(params, errlog=errlog) as (read, write):
                    async with ClientSession(read, write) as client:
                        await client.initialize()
                        await client.call_tool("orders.lookup", {"order_id": "ORD-0001"})
                        await client.call_tool("fs.delete", {"path": "reports/q3.md"})

        anyio.run(session)  # the server exits when the client closes its stdin
        spans = receiver.spans()
    calls: dict[str, dict[str, Any]] = {
        s["attributes"]["gen_ai.tool.name"]: s for s in spans if s["name"].startswith("execute_")
    }
    assert sorted(calls) == ["fs.delete", "orders.lookup"]
    assert [calls[t]["attributes"]["proctor.decision.effect"] for t in sorted(calls)] == [
        "block",
        "allow",
    ]
    assert calls["fs.delete"]["attributes"]["proctor.outcome"] == "blocked"
    assert {s["resource"]["proctor.role"] for s in spans} == {"serve"}
    stderr = (tmp_path / "server-stderr.log").read_text(encoding="utf-8")
    assert "OpenTelemetry export failed" not in stderr
