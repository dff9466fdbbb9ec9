"""A TCP proxy in front of a console whose connections a test can cut: the closest thing to a
dropped network (Chromium's offline emulation keeps an open event stream alive)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

CHUNK = 65536


class CuttableProxy:
    """Forwards 127.0.0.1:<port> to `upstream`. `cut()` closes every open connection and
    closes each new one at once until `restore()`."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self._upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._cut = False
        self._closed = False
        self._threads: list[threading.Thread] = []
        self._spawn(self._accept)

    def cut(self) -> None:
        with self._lock:
            self._cut = True
            sockets, self._open = self._open, set()
        for sock in sockets:
            _close(sock)

    def restore(self) -> None:
        with self._lock:
            self._cut = False

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self.cut()
        _close(self._listener)
        for thread in self._threads:
            thread.join(timeout=5)

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                refuse = self._cut or self._closed
            if refuse:
                _close(client)
                continue
            try:
                server = socket.create_connection(self._upstream)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._open |= {client, server}
            self._spawn(self._pump, client, server)
            self._spawn(self._pump, server, client)

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        with suppress(OSError):
            while data := source.recv(CHUNK):
                target.sendall(data)
        for sock in (source, target):
            with self._lock:
                self._open.discard(sock)
            _close(sock)


def _close(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with suppress(OSError):
        sock.close()


@contextmanager
def cuttable_proxy(upstream: tuple[str, int]) -> Iterator[CuttableProxy]:
    proxy = CuttableProxy(upstream)
    try:
        yield proxy
    finally:
        proxy.close()
