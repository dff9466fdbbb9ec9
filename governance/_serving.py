"""Serving an ASGI app with uvicorn on a socket bound up front: in the foreground, or in a
background thread that a `with` block starts and stops. Shared by Proctor's MCP server face
(`proctor serve --http`, tests) and the bundled stubs (the OpenAI stub, the demo MCP server)."""

from __future__ import annotations

import errno
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import uvicorn

from governance.core._errors import AddressUnavailable, host_port

# Why a bind fails in ways the operator fixes by picking another --host/--port.
_UNAVAILABLE = {
    errno.EADDRINUSE: ("the port is already in use", "port"),
    errno.EACCES: ("permission denied (ports below 1024 need privileges)", "port"),
    errno.EADDRNOTAVAIL: ("the address is not one of this machine's", "host"),
}


def bind_socket(host: str, port: int, failed: Callable[[str], Exception]) -> socket.socket:
    """A TCP socket bound to `host:port` (port 0 picks a free one) before serving starts, so the
    real port is known up front. A taken, privileged or foreign address raises
    `AddressUnavailable`; any other failure `failed(why)`."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM
        )[0]
    except OSError as exc:
        raise AddressUnavailable(
            host, port, f"cannot resolve the host ({exc})", culprit="host"
        ) from exc
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno in _UNAVAILABLE:
            reason, culprit = _UNAVAILABLE[exc.errno]
            raise AddressUnavailable(host, port, reason, culprit=culprit) from exc
        raise failed(f"cannot listen on {host_port(host, port)}: {exc}") from exc
    return sock


class StartedServer(uvicorn.Server):
    """A uvicorn server that reports, once, the moment it accepts connections."""

    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_started = on_started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self._on_started()


@contextmanager
def serving_in_thread(
    config: uvicorn.Config,
    sock: socket.socket,
    *,
    name: str,
    startup_timeout: float,
    stop_timeout: float,
    failed: Callable[[str], Exception],
) -> Iterator[None]:
    """Serve on `sock` in a daemon thread until the block ends; then stop, join, close `sock`.

    Enters once uvicorn accepts connections; raises `failed(why)` when it does not within
    `startup_timeout`. On exit it waits `stop_timeout` for a graceful stop, then forces one.
    """
    ready = threading.Event()
    server = StartedServer(config, on_started=ready.set)
    failures: list[BaseException] = []

    def serve() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # SystemExit on a failed startup: report it
            failures.append(exc)
        finally:
            ready.set()

    thread = threading.Thread(target=serve, name=name, daemon=True)
    thread.start()
    try:
        if not ready.wait(startup_timeout) or not server.started:
            raise failed(
                f"did not start within {startup_timeout:g}s"
                + (f": {failures[0]!r}" if failures else "")
            )
        yield
    finally:
        server.should_exit = True
        thread.join(stop_timeout)
        if thread.is_alive():
            server.force_exit = True
            thread.join(5.0)
        sock.close()
