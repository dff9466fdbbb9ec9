"""The demo server over MCP Streamable HTTP, in a background thread (tests of HTTP sources)."""

from __future__ import annotations

import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import uvicorn

from governance import serving_in_thread
from stubs.mcp_demo._server import build_server

LOOPBACK = "127.0.0.1"


@contextmanager
def serving_http(
    descriptions: Mapping[str, str] | None = None, *, startup_timeout: float = 10.0
) -> Iterator[str]:
    """Serve the demo tools on 127.0.0.1 (a free port); yields the MCP endpoint URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((LOOPBACK, 0))
    port = sock.getsockname()[1]
    app = build_server(descriptions).streamable_http_app(host=LOOPBACK)
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on")
    with serving_in_thread(
        config,
        sock,
        name="mcp-demo-http",
        startup_timeout=startup_timeout,
        stop_timeout=10.0,
        failed=lambda why: RuntimeError(f"the HTTP demo server {why}"),
    ):
        yield f"http://{LOOPBACK}:{port}/mcp"
