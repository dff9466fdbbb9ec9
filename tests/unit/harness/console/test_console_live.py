"""The live journal and its SSE stream: in order, resumable, and honest about what it lost."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import uvicorn

from governance import serving_in_thread
from harness.console import ConsoleState, create_app
from harness.console._live import EventHub
from harness.console._session import COOKIE, SessionCodec
from tests.unit.harness.console.conftest import TOKEN


def test_events_come_back_in_order_after_any_id() -> None:
    hub = EventHub()
    ids = [hub.publish("run", {"n": n}) for n in range(5)]
    assert ids == [1, 2, 3, 4, 5]
    since = hub.after(2)
    assert [e.id for e in since.events] == [3, 4, 5] and not since.reset
    assert hub.after(5).events == [] and not hub.after(5).reset


def test_asking_after_an_id_the_journal_dropped_says_reset() -> None:
    hub = EventHub(capacity=3)
    for n in range(6):
        hub.publish("run", {"n": n})
    # Kept: 4, 5, 6. After 3 nothing is missing; after 2, event 3 is gone.
    assert [e.id for e in hub.after(3).events] == [4, 5, 6] and not hub.after(3).reset
    assert hub.after(2).reset and hub.after(0).reset


def test_an_id_from_before_a_restart_says_reset() -> None:
    hub = EventHub()
    hub.publish("run")
    assert hub.after(40).reset


def test_publishing_from_many_threads_loses_and_repeats_no_id() -> None:
    hub = EventHub()
    threads = [
        threading.Thread(target=lambda: [hub.publish("run") for _ in range(200)]) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [e.id for e in hub.after(0).events] == list(range(1, 1601))


def test_a_waiter_wakes_when_an_event_arrives() -> None:
    hub = EventHub()
    timer = threading.Timer(0.2, lambda: hub.publish("approvals", {"x": 1}))
    timer.start()
    since = hub.wait_after(0, timeout=30)
    timer.join()
    assert [e.topic for e in since.events] == ["approvals"]


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
