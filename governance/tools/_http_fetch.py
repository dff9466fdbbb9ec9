"""`http.get`'s fetch: resolve once, refuse anything not public, connect to that address only.

The host is resolved exactly once per hop by an injectable resolver; every address it returns
must pass `refused_address_reason`, and the connection goes to one of those validated
addresses (the original host name travels only in the Host header and TLS SNI), so a DNS
answer that changes between check and use (rebinding) cannot redirect the socket. Redirects
are followed by hand: each hop is parsed and judged again, may not leave the host (unless the
tool's own redirect allow-list names the target), may not downgrade https, and at most
`max_redirects` are followed. Bodies are streamed against a byte cap and one deadline covers
the whole fetch. Every refusal is a ToolExecutionError with a reason code the agent sees.
"""

from __future__ import annotations

import codecs
import ipaddress
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urljoin

from governance.arguments._urls import HttpUrl, IPAddress, UrlRefused, host_matches, parse_http_url
from governance.tools._http_addresses import refused_address_reason, refused_name_reason
from governance.tools._local import ToolExecutionError

Resolver = Callable[[str, int], Sequence[str]]
Connector = Callable[[str, int, float], socket.socket]


def system_resolver(host: str, port: int) -> list[str]:
    """Every address `getaddrinfo` gives for a TCP connection to `host`."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def tcp_connector(address: str, port: int, timeout: float) -> socket.socket:
    return socket.create_connection((address, port), timeout=timeout)


@dataclass(frozen=True, slots=True)
class Target:
    """Validated addresses to connect to (in order) and the port."""

    addresses: tuple[str, ...]
    port: int


@dataclass(frozen=True, slots=True)
class HttpFetcher:
    """The settings and seams of one `http.get` tool.

    `_loopback_routes_for_tests` maps an exact (host, port) a URL names to a port on 127.0.0.1
    that the fetch then connects to without resolving or judging it. It exists for tests and
    the harness's fixture servers only: nothing in the configuration, the policy or the
    environment can set it (a test pins that).
    """

    allowed_content_types: tuple[str, ...] = ("text/html", "text/plain", "application/json")
    allowed_ports: tuple[int, ...] = (80, 443)
    redirect_hosts: tuple[str, ...] = ()
    max_redirects: int = 5
    max_bytes: int = 512 * 1024
    timeout_seconds: float = 10.0
    resolver: Resolver = system_resolver
    connector: Connector = tcp_connector
    clock: Callable[[], float] = time.monotonic
    _loopback_routes_for_tests: Mapping[tuple[str, int], int] = field(default_factory=dict)

    def fetch(self, url: str) -> dict[str, object]:
        """The final URL, status, content type and text of `url`, or ToolExecutionError."""
        from governance.tools._http_wire import exchange  # http.client and ssl: only when used

        deadline = self.clock() + self.timeout_seconds
        resolved: dict[str, tuple[IPAddress, ...]] = {}  # one resolution per host per fetch
        current = _parse(url)
        for _hop in range(self.max_redirects + 1):
            target = self._target(current, resolved)
            reply = exchange(self, current, target, deadline)
            if reply.location is not None:
                following = _parse(urljoin(current.text, reply.location))
                if current.scheme == "https" and following.scheme == "http":
                    raise ToolExecutionError(
                        "redirect_downgrade", f"refused a redirect from https to {following.text}"
                    )
                if following.host != current.host and not host_matches(
                    following.host, self.redirect_hosts
                ):
                    raise ToolExecutionError(
                        "redirect_off_allow_list",
                        f"the page redirects to another host: {following.text} (not followed;"
                        " fetch it with a new http.get call if the policy allows it)",
                    )
                current = following
                continue
            return self._result(
                current, reply.status, reply.content_type, reply.body, reply.truncated
            )
        raise ToolExecutionError(
            "too_many_redirects", f"more than {self.max_redirects} redirects; stopped at {url}"
        )

    def _target(self, url: HttpUrl, resolved: dict[str, tuple[IPAddress, ...]]) -> Target:
        """Where to connect for `url`: validated addresses, resolved at most once per host."""
        route = self._loopback_routes_for_tests.get((url.host, url.port))
        if route is not None:
            return Target(("127.0.0.1",), route)
        if url.port not in self.allowed_ports:
            raise ToolExecutionError(
                "port_not_allowed",
                f"port {url.port} is not allowed (allowed: "
                f"{', '.join(map(str, self.allowed_ports))})",
            )
        if url.address is not None:
            found: tuple[IPAddress, ...] = (url.address,)
        elif url.host in resolved:
            found = resolved[url.host]
        else:
            name_reason = refused_name_reason(url.host)
            if name_reason is not None:
                raise ToolExecutionError(name_reason, f"host {url.host!r} is refused")
            found = resolved[url.host] = self._resolve(url)
        for address in found:
            reason = refused_address_reason(address)
            if reason is not None:
                raise ToolExecutionError(
                    reason, f"host {url.host!r} resolves to a refused address ({reason})"
                )
        return Target(tuple(str(address) for address in found), url.port)

    def _resolve(self, url: HttpUrl) -> tuple[IPAddress, ...]:
        try:
            answers = list(self.resolver(url.host, url.port))
        except (OSError, UnicodeError) as exc:
            raise ToolExecutionError(
                "unresolvable", f"host {url.host!r} does not resolve ({type(exc).__name__})"
            ) from None
        if not answers:
            raise ToolExecutionError("unresolvable", f"host {url.host!r} has no address")
        found: list[IPAddress] = []
        for answer in answers:
            try:
                found.append(_ip(answer))
            except ValueError:
                raise ToolExecutionError(
                    "unresolvable", f"host {url.host!r} resolved to an unreadable address"
                ) from None
        return tuple(found)

    def check_type(self, header: str) -> None:
        media = header.split(";", 1)[0].strip().lower()
        if media not in self.allowed_content_types:
            raise ToolExecutionError(
                "content_type_refused",
                f"content type {media or 'none'!r} is not one of "
                f"{', '.join(self.allowed_content_types)}",
            )

    def _result(
        self, url: HttpUrl, status: int, content_type: str, body: bytes, truncated: bool
    ) -> dict[str, object]:
        self.check_type(content_type)
        media = content_type.split(";", 1)[0].strip().lower()
        try:
            text = body.decode(_charset(content_type), errors="replace")
            if media == "text/html":
                from governance.tools._http_text import html_text  # only when used

                text = html_text(text)
        except (ValueError, LookupError, AssertionError) as exc:  # the server picks none
            raise ToolExecutionError(
                "undecodable", f"{url.text} could not be read as text ({type(exc).__name__})"
            ) from None
        return {
            "url": url.text,
            "status": status,
            "content_type": media,
            "text": text,
            "truncated": truncated,
        }


def _parse(url: str) -> HttpUrl:
    try:
        return parse_http_url(url)
    except UrlRefused as exc:
        raise ToolExecutionError(exc.reason, exc.message) from None


def _ip(text: str) -> IPAddress:
    return ipaddress.ip_address(text)


# Charsets a page may name, by `codecs.lookup` name (so every alias counts); any other name is
# read as UTF-8: a server must not pick a codec that fails or misreads (idna, punycode, utf-7).
_CHARSETS = frozenset(
    {"utf-8", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be",
     "iso8859-1", "cp1252", "ascii"}
)  # fmt: skip


def _charset(content_type: str) -> str:
    for param in content_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            try:
                name = codecs.lookup(value.strip().strip('"').lower()).name
            except (LookupError, ValueError, TypeError):
                return "utf-8"
            return name if name in _CHARSETS else "utf-8"
    return "utf-8"
