"""One HTTP exchange over a socket to a validated address: http.client with a pinned connect.

Every read and write on the socket first sets its timeout to what is left of the fetch's one
deadline (and refuses at zero), so a server dripping a byte at a time cannot stretch the fetch;
the TLS handshake is one call under that timeout. Bytes before the body (status lines, headers,
any number of `100 Continue` responses, which http.client skips) count against `_HEAD_CAP`, and
the body's framing (chunk sizes, extensions, trailers) against a cap beside the body's own.
Imported only when `http.get` runs (http.client and ssl cost the cold CLI paths time).
"""

from __future__ import annotations

import http.client
import io
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from governance.arguments._urls import HttpUrl
from governance.tools._local import ToolExecutionError


class HttpFetcher(Protocol):
    """What an exchange needs of the fetch's settings (the fetcher, seen from here)."""

    @property
    def connector(self) -> Callable[[str, int, float], socket.socket]: ...
    @property
    def clock(self) -> Callable[[], float]: ...
    @property
    def allowed_content_types(self) -> tuple[str, ...]: ...
    @property
    def max_bytes(self) -> int: ...
    def check_type(self, header: str) -> None: ...


class Target(Protocol):
    """Validated addresses to connect to, in order, and the port."""

    @property
    def addresses(self) -> tuple[str, ...]: ...
    @property
    def port(self) -> int: ...


_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_CHUNK = 16384
_HEAD_CAP = 64 * 1024  # status lines and headers, every 1xx response's included
_FRAMING_CAP = 64 * 1024  # wire bytes a body may take beyond twice its cap (chunk framing)


class _DeadlineSocket:
    """The connection's socket as http.client sees it: each recv and send runs under the time
    left (`remaining` raises at zero) and the bytes received are counted against a limit."""

    def __init__(self, sock: socket.socket, remaining: Callable[[], float], url: str) -> None:
        self._sock = sock
        self._remaining = remaining
        self._url = url
        self.received = 0
        self.limit = _HEAD_CAP
        self.reason = "headers_too_large"
        self._io_refs = 0
        self._closed = False

    def _before(self) -> None:
        if self.received >= self.limit:
            raise ToolExecutionError(
                self.reason, f"{self._url} sent too many bytes around its body ({self.reason})"
            )
        self._sock.settimeout(self._remaining())

    def recv_into(self, buffer: memoryview, nbytes: int = 0, flags: int = 0) -> int:
        self._before()
        count = self._sock.recv_into(buffer, nbytes or len(buffer), flags)
        self.received += count
        return count

    def recv(self, size: int, flags: int = 0) -> bytes:
        self._before()
        data = self._sock.recv(size, flags)
        self.received += len(data)
        return data

    def sendall(self, data: bytes) -> None:
        self._sock.settimeout(self._remaining())
        self._sock.sendall(data)

    def makefile(self, mode: str = "rb", *args: object, **kwargs: object) -> io.BufferedReader:
        if mode != "rb":
            raise ValueError(f"only 'rb' is supported, not {mode!r}")
        self._io_refs += 1
        return io.BufferedReader(socket.SocketIO(self, "rb"))  # type: ignore[arg-type]

    def fileno(self) -> int:
        return self._sock.fileno()

    def settimeout(self, value: float | None) -> None:
        self._sock.settimeout(value)

    def _decref_socketios(self) -> None:  # a makefile() reader closed (as in socket.socket)
        self._io_refs -= 1
        if self._closed and self._io_refs <= 0:
            self._sock.close()

    def close(self) -> None:  # the reader http.client hands the response keeps it open
        self._closed = True
        if self._io_refs <= 0:
            self._sock.close()


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    content_type: str
    body: bytes
    truncated: bool
    location: str | None  # set only for a redirect


class _PinnedConnection(http.client.HTTPConnection):
    """An HTTP(S) connection whose socket goes to a validated address, never to a name: the
    host name travels only in the Host header and as TLS SNI (certificates are checked
    against it)."""

    def __init__(self, url: HttpUrl, target: Target, fetcher: HttpFetcher, deadline: float):
        super().__init__(url.host, target.port)
        self._url = url
        self._target = target
        self._fetcher = fetcher
        self._deadline = deadline
        self.wire: _DeadlineSocket | None = None

    def remaining(self) -> float:
        left = self._deadline - self._fetcher.clock()
        if left <= 0:
            raise ToolExecutionError("timeout", f"{self._url.text} took too long")
        return left

    def connect(self) -> None:
        failure: OSError = OSError("no address to connect to")
        for address in self._target.addresses:
            try:
                sock = self._fetcher.connector(address, self._target.port, self.remaining())
                break
            except OSError as exc:
                failure = exc
        else:
            raise failure
        try:
            sock.settimeout(self.remaining())
            if self._url.scheme == "https":
                context = ssl.create_default_context()
                sock = context.wrap_socket(sock, server_hostname=self._url.host)
        except BaseException:
            sock.close()
            raise
        self.wire = _DeadlineSocket(sock, self.remaining, self._url.text)
        self.sock = self.wire


def exchange(fetcher: HttpFetcher, url: HttpUrl, target: Target, deadline: float) -> Reply:
    """GET `url` from `target`; the body is streamed against the byte cap and the deadline."""
    conn = _PinnedConnection(url, target, fetcher, deadline)
    response: http.client.HTTPResponse | None = None
    try:
        conn.request(
            "GET",
            url.target,
            headers={
                "Host": url.authority,
                "Accept": ", ".join(fetcher.allowed_content_types),
                "Accept-Encoding": "identity",
                "User-Agent": "proctor-http.get/1",
                "Connection": "close",
            },
        )
        response = conn.getresponse()
        wire = conn.wire
        if wire is not None:  # from here on the bytes are the body and its framing
            wire.limit = wire.received + 2 * fetcher.max_bytes + _FRAMING_CAP
            wire.reason = "framing_too_large"
        location = response.getheader("location")
        if response.status in _REDIRECTS and location is not None:
            return Reply(response.status, "", b"", False, location)
        encoding = (response.getheader("content-encoding") or "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise ToolExecutionError(
                "encoded_response", f"refused a {encoding!r}-encoded response (size unknowable)"
            )
        content_type = response.getheader("content-type") or ""
        fetcher.check_type(content_type)  # before reading a byte of a refused body
        body, truncated = _read(response, fetcher.max_bytes)
        return Reply(response.status, content_type, body, truncated, None)
    except ToolExecutionError:
        raise
    except TimeoutError:
        raise ToolExecutionError("timeout", f"{url.text} took too long") from None
    except ssl.SSLError as exc:
        raise ToolExecutionError(
            "tls_failed", f"TLS with {url.host} failed ({exc.reason})"
        ) from None
    except (OSError, http.client.HTTPException) as exc:
        raise ToolExecutionError(
            "connection_failed", f"fetching {url.text} failed ({type(exc).__name__})"
        ) from None
    finally:
        if response is not None:
            response.close()
        conn.close()


def _read(response: http.client.HTTPResponse, cap: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    while size <= cap:
        chunk = response.read1(min(_CHUNK, cap + 1 - size))
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)[:cap], True
