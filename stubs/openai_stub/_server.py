"""Serving the stub over real HTTP: in the foreground (`proctor stub`) or a background thread."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import uvicorn

from governance import StartedServer, bind_socket, serving_in_thread
from stubs.openai_stub._app import DEFAULT_MODEL, create_app
from stubs.openai_stub._errors import StubStartError

LOOPBACK = "127.0.0.1"
# Not 8765, `proctor serve`'s default: a user runs the stub and the MCP server side by side.
STUB_PORT = 8766
SHUTDOWN_GRACE = 2  # seconds in-flight requests get when the stub stops


def base_url(sock: socket.socket) -> str:
    """The OpenAI-style base URL (ending in /v1) of a bound socket."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/v1" if ":" in host else f"http://{host}:{port}/v1"


def _config(models: Sequence[str], api_key_required: bool, **options: Any) -> uvicorn.Config:
    app = create_app(models=models, api_key_required=api_key_required)
    return uvicorn.Config(
        app,
        lifespan="off",
        ws="none",
        http="h11",
        timeout_graceful_shutdown=SHUTDOWN_GRACE,
        **options,
    )


def run_stub(
    host: str = LOOPBACK,
    port: int = STUB_PORT,
    *,
    models: Sequence[str] = (DEFAULT_MODEL,),
    api_key_required: bool = True,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the stub in the foreground until interrupted; `on_ready(base_url)` once listening."""
    sock = bind_socket(host, port, StubStartError)
    url = base_url(sock)
    config = _config(models, api_key_required, log_level="info")
    server = StartedServer(config, on_started=lambda: on_ready(url) if on_ready else None)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


@contextmanager
def running_stub(
    port: int = 0,
    *,
    models: Sequence[str] = (DEFAULT_MODEL,),
    api_key_required: bool = True,
    startup_timeout: float = 10.0,
) -> Iterator[str]:
    """Run the stub on 127.0.0.1 in a background thread; yields its base URL (`.../v1`).

    Returns once uvicorn accepts connections (bounded by `startup_timeout`) and, on exit, stops
    it and joins the thread. Port 0 picks a free port.
    """
    sock = bind_socket(LOOPBACK, port, StubStartError)
    # log_config=None: a test's logging configuration is not ours to rewrite.
    config = _config(models, api_key_required, log_config=None, access_log=False)
    with serving_in_thread(
        config,
        sock,
        name=f"openai-stub-{port}",
        startup_timeout=startup_timeout,
        stop_timeout=SHUTDOWN_GRACE + 5.0,
        failed=lambda why: StubStartError(f"the OpenAI stub {why}"),
    ):
        yield base_url(sock)
