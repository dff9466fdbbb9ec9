"""One HTTP exchange over a socket to a validated address: http.client with a pinned connect.

Imported only when `http.get` runs (http.client and ssl cost the cold CLI paths time).
"""

from __future__ import annotations

import http.client
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

    def remaining(self) -> float:
        left = self._deadline - self._fetcher.clock()
        if left <= 0:
            raise ToolExecutionError("timeout", f"{self._url.text} took too long")
        return left

    def refresh_timeout(self) -> None:
        if self.sock is not None:
            self.sock.settimeout(self.remaining())

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
        self.sock = sock


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
        conn.refresh_timeout()
        response = conn.getresponse()
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
        body, truncated = _read(response, conn, fetcher.max_bytes)
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


def _read(
    response: http.client.HTTPResponse, conn: _PinnedConnection, cap: int
) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    while size <= cap:
        conn.refresh_timeout()
        chunk = response.read1(min(_CHUNK, cap + 1 - size))
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)[:cap], True
