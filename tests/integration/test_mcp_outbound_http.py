"""Proctor over Streamable HTTP: the SDK's HTTP client, DNS-rebinding protection, loopback bind."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import anyio
import httpx2
import mcp_types as types
import pytest
from click.testing import CliRunner
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

import governance
import governance._mcp_server as mcp_server
from governance._gateway import Gateway
from governance._mcp_server import build_mcp_server, running_http_server
from governance.tools import outbox_rows
from harness.cli._app import cli

pytestmark = pytest.mark.slow

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def _run_of(result: types.CallToolResult) -> tuple[str, str]:
    assert result.meta is not None
    return result.meta["proctor"]["run_id"], result.meta["proctor"]["call_id"]


@pytest.fixture
def url(governed: Gateway) -> Iterator[str]:
    with running_http_server(build_mcp_server(governed)) as url:
        yield url


async def _session_calls(url: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listing = await session.list_tools()
            results: list[Any] = [listing]
            for name, arguments in calls:
                results.append(await session.call_tool(name, arguments))
            return results


def test_an_http_client_gets_governed_results_one_run_per_session(
    url: str, governed: Gateway
) -> None:
    assert urlsplit(url).hostname == "127.0.0.1" and urlsplit(url).path == "/mcp"
    calls = [
        ("orders.lookup", {"order_id": "ORD-0002"}),
        ("fs.delete", {"path": "reports/q3.md"}),
        ("email.send", {"to": "a@example.com", "subject": "s", "body": "b"}),
    ]
    listing, lookup, delete, email = anyio.run(_session_calls, url, calls)
    _, again = anyio.run(_session_calls, url, calls[:1])

    tools = {tool.name: tool for tool in listing.tools}
    assert set(governed.registry.names()) <= set(tools)
    assert tools["fs.delete"].meta["proctor"]["always_blocked"] is True
    assert lookup.is_error is False and "ORD-0002" in _texts(lookup)[0]
    assert delete.is_error is True and "blocked_by_rule" in _texts(delete)[0]
    assert email.is_error is False
    assert email.structured_content["status"] == "waiting_approval"
    assert governed.approvals.get(email.structured_content["approval_id"]).status == "pending"
    assert outbox_rows(governed.workspace) == []
    assert [_run_of(r) for r in (lookup, delete, email)] == [
        ("mcp-1", "c1"),
        ("mcp-1", "c2"),
        ("mcp-1", "c3"),
    ]
    assert _run_of(again) == ("mcp-2", "c1")
    assert sorted(governed.audit.run_ids()) == ["mcp-1", "mcp-2"]
    assert all(v.ok for v in governed.audit.verify_all())


def test_a_stateless_modern_request_gets_a_run_of_its_own(url: str, governed: Gateway) -> None:
    async def main() -> list[types.CallToolResult]:
        async with Client(url) as client:  # auto: the 2026-07-28 per-request protocol
            return [await client.call_tool("fs.list", {}) for _ in range(2)]

    first, second = anyio.run(main)
    assert not first.is_error and not second.is_error
    assert {_run_of(first), _run_of(second)} == {("mcp-1", "c1"), ("mcp-2", "c1")}


def test_a_session_id_on_a_stateless_request_cannot_join_another_run(
    url: str, governed: Gateway
) -> None:
    async def main() -> list[types.CallToolResult]:
        async with httpx2.AsyncClient(headers={"Mcp-Session-Id": "forged"}) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                return [await client.call_tool("fs.list", {}) for _ in range(2)]

    first, second = anyio.run(main)
    assert _run_of(first)[0] != _run_of(second)[0]
    assert _run_of(second)[1] == "c1"


def _post(url: str, **headers: str) -> httpx2.Response:
    with httpx2.Client(timeout=10) as client:
        return client.post(url, json=INITIALIZE, headers={**HEADERS, **headers})


def test_a_foreign_host_header_is_refused_dns_rebinding_protection(url: str) -> None:
    port = urlsplit(url).port
    assert _post(url).status_code == 200  # the same request with the real Host is served
    assert _post(url, Host=f"localhost:{port}").status_code == 200
    refused = _post(url, Host=f"evil.example:{port}")
    assert refused.status_code == 421
    assert _post(url, Host="127.0.0.1:1").status_code == 421  # right host, wrong port
    assert _post(url, Origin="http://evil.example").status_code == 403


# -- the CLI -----------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PROCTOR_")}


def _lines(stream: IO[str]) -> tuple[queue.Queue[str], threading.Thread]:
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)
        lines.put("")  # EOF

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return lines, thread


def test_proctor_serve_http_binds_loopback_by_default_and_stops_on_sigint(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "serve", "--transport", "http", "--port", "0",
         "--state-dir", str(tmp_path / "state")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    lines, pump = _lines(proc.stderr)
    try:
        found = None
        while found is None:
            line = lines.get(timeout=30)
            assert line, "the server exited before it was ready"
            found = re.search(r"serving MCP \(Streamable HTTP\) at (\S+)", line)
        url = found.group(1)
        assert urlsplit(url).hostname == "127.0.0.1"
        (_, result) = anyio.run(_session_calls, url, [("fs.list", {})])
        assert result.is_error is False
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        pump.join(timeout=10)  # EOF once the process is gone; then the pipe is ours to close
        proc.stdout.close()
        proc.stderr.close()


def test_a_non_loopback_host_needs_allow_remote(tmp_path: Path) -> None:
    done = CliRunner().invoke(
        cli,
        ["serve", "--transport", "http", "--host", "0.0.0.0",
         "--state-dir", str(tmp_path / "state")],
    )  # fmt: skip
    assert done.exit_code == 64
    assert "--allow-remote" in done.stderr
    assert not (tmp_path / "state").exists()  # refused before anything was opened


def test_allow_remote_serves_with_a_warning_and_rebinding_protection_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served: dict[str, Any] = {}

    def fake_serve_http(server: Any, **options: Any) -> None:
        served.update(options)

    monkeypatch.setattr(mcp_server, "serve_http", fake_serve_http)
    # `proctor serve` reads it through governance's lazy exports, which keep what an earlier
    # test resolved: patched there too, or the real server would serve 0.0.0.0 forever.
    monkeypatch.setattr(governance, "serve_http", fake_serve_http, raising=False)
    result = CliRunner().invoke(
        cli,
        ["serve", "--transport", "http", "--host", "0.0.0.0", "--allow-remote",
         "--allow-host", "proctor.lan", "--state-dir", str(tmp_path / "state")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "warning: serving on 0.0.0.0, which is not loopback" in result.stderr
    assert served["host"] == "0.0.0.0" and served["allowed_hosts"] == ("proctor.lan",)
