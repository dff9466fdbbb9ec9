"""The live journal over SSE (a real server): in order, resumable after a reconnect, and honest
about what it lost (the journal itself: test_live_hub.py)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import uvicorn

from governance import serving_in_thread
from harness.console import ConsoleState, create_app
from harness.console._session import COOKIE, SessionCodec
from tests.unit.harness.console.conftest import TOKEN


@contextmanager
def _served(state: ConsoleState) -> Iterator[tuple[str, int]]:
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(create_app(state), lifespan="off", ws="none", http="h11",
                            log_config=None, access_log=False)  # fmt: skip
    with serving_in_thread(
        config, sock, name="console-test", startup_timeout=10, stop_timeout=5,
        failed=RuntimeError,
    ):  # fmt: skip
        yield sock.getsockname()[:2]


def _frames(response: http.client.HTTPResponse, count: int) -> list[dict[str, str]]:
    frames: list[dict[str, str]] = []
    current: dict[str, str] = {}
    while len(frames) < count:
        line = response.readline().decode().rstrip("\n")
        if line == "":
            if current:
                frames.append(current)
            current = {}
        elif not line.startswith(":"):
            key, _, value = line.partition(": ")
            current[key] = value
    return frames


def _open(host: str, port: int, cookie: str, query: str, headers: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    conn = http.client.HTTPConnection(host, port, timeout=10)
    conn.request(
        "GET", f"/live{query}",
        headers={"Cookie": f"{COOKIE}={cookie}", "Accept": "text/event-stream", **(headers or {})},
    )  # fmt: skip
    return conn, conn.getresponse()


@pytest.mark.slow
def test_the_stream_sends_what_happened_after_the_rendered_id_then_what_follows(
    console_state: ConsoleState,
) -> None:
    _, cookie = SessionCodec(TOKEN).issue("ann", int(console_state.clock.now().timestamp()))
    hub = console_state.hub
    first = hub.publish("run", {"run_id": "r1", "n": 1})
    hub.publish("run", {"run_id": "r1", "n": 2})
    with _served(console_state) as (host, port):
        conn, response = _open(host, port, cookie, f"?after={first}")
        try:
            assert response.status == 200
            assert response.getheader("content-type").startswith("text/event-stream")
            retry, frame = _frames(response, 2)
            assert "retry" in retry
            assert frame["event"] == "run" and json.loads(frame["data"])["n"] == 2
            hub.publish("approvals", {"pending": ["apr-1"]})
            (later,) = _frames(response, 1)
            assert later["event"] == "approvals" and later["id"] == str(first + 2)
        finally:
            conn.close()
        # A reconnect names the last id it saw; what came meanwhile arrives, nothing twice.
        hub.publish("run", {"run_id": "r1", "n": 3})
        conn, response = _open(host, port, cookie, "?after=0", {"Last-Event-ID": str(first + 2)})
        try:
            _, frame = _frames(response, 2)
            assert json.loads(frame["data"])["n"] == 3
        finally:
            conn.close()


@pytest.mark.slow
def test_a_stream_asked_for_a_lost_id_is_told_to_reset(console_state: ConsoleState) -> None:
    _, cookie = SessionCodec(TOKEN).issue("ann", int(console_state.clock.now().timestamp()))
    with _served(console_state) as (host, port):
        conn, response = _open(host, port, cookie, "?after=99")
        try:
            _, frame = _frames(response, 2)
            assert frame["event"] == "reset"
        finally:
            conn.close()
