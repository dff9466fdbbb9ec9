"""The demo server over MCP Streamable HTTP, in a background thread (tests of HTTP sources)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import uvicorn

from stubs.mcp_demo._server import build_server

LOOPBACK = "127.0.0.1"


class _Server(uvicorn.Server):
    """A uvicorn server that reports the moment it accepts connections."""

    def __init__(self, config: uvicorn.Config, ready: threading.Event) -> None:
        super().__init__(config)
        self._ready = ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self._ready.set()


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
    ready = threading.Event()
    server = _Server(config, ready)
    failures: list[BaseException] = []

    def serve() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # SystemExit on a failed startup: report it
            failures.append(exc)
        finally:
            ready.set()

    thread = threading.Thread(target=serve, name="mcp-demo-http", daemon=True)
    thread.start()
    try:
        if not ready.wait(startup_timeout) or not server.started:
            raise RuntimeError(f"the HTTP demo server did not start: {failures!r}")
        yield f"http://{LOOPBACK}:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10.0)
        if thread.is_alive():
            server.force_exit = True
            thread.join(5.0)
        sock.close()
