"""The stubs' background server: enters only once serving, fails loudly, and cleans up after."""

from __future__ import annotations

import socket
import threading
import urllib.request
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import pytest
import uvicorn

from governance._serving import serving_in_thread

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


async def _hello(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.failed", "message": "refused on purpose"})
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


class Failed(Exception):
    pass


def _bound() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


def _threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


def test_the_block_runs_while_the_server_answers_and_everything_stops_after() -> None:
    sock = _bound()
    port = sock.getsockname()[1]
    config = uvicorn.Config(_hello, lifespan="off", log_config=None, access_log=False)
    with serving_in_thread(
        config, sock, name="serving-test-ok", startup_timeout=10, stop_timeout=5, failed=Failed
    ):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as reply:
            assert reply.read() == b"hello"
    assert _threads("serving-test-ok") == []
    assert sock.fileno() == -1  # closed


def test_a_server_that_fails_to_start_raises_the_callers_error_and_cleans_up() -> None:
    sock = _bound()
    config = uvicorn.Config(_hello, lifespan="on", log_config=None, access_log=False)
    entered = False
    with pytest.raises(Failed, match="did not start within 10s: SystemExit"):
        with serving_in_thread(
            config,
            sock,
            name="serving-test-bad",
            startup_timeout=10,
            stop_timeout=5,
            failed=Failed,
        ):
            entered = True
    assert not entered
    assert _threads("serving-test-bad") == []
    assert sock.fileno() == -1
