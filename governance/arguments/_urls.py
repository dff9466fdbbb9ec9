"""One strict reading of an http(s) URL, shared by the policy (`url_host`) and `http.get`.

Parse, don't re-validate: the host the policy allow-lists is the host the tool connects to, so
the two must never read a URL differently. Anything a browser, curl or a resolver might read
another way (userinfo, backslashes, percent-encoded or non-ASCII hosts, zone ids, a dotted
name ending in a number that is not a valid IPv4 in inet_aton notation) is refused, not guessed.
A host written as an IPv4 in any inet_aton notation (`2130706433`, `0177.0.0.1`, `0x7f.1`,
`127.1`) is read to the address it names, so no later check sees a different spelling.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Literal

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_URL_LENGTH = 2048
_DEFAULT_PORT = {"http": 80, "https": 443}
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_NUMERIC_PART = re.compile(r"^(0[xX][0-9A-Fa-f]*|[0-9]+)$")
_PORT = re.compile(r"^[0-9]{1,5}$")
# Anything that is not printable ASCII, and the characters parsers disagree about.
_FORBIDDEN = re.compile(r"[^\x21-\x7e]|\\")


class UrlRefused(ValueError):
    """A URL `http.get` will not fetch; `reason` is a stable code the agent sees."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        self.message = message
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class HttpUrl:
    """A parsed URL: lower-case host without a trailing dot (IPv6 without brackets), the
    effective port, the request target (path and query, never the fragment) and, when the
    host is an IP literal in any notation, the address it names."""

    scheme: Literal["http", "https"]
    host: str
    port: int
    target: str
    address: IPAddress | None

    @property
    def authority(self) -> str:
        """The Host header: the host (bracketed if IPv6) and the port unless it is the default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == _DEFAULT_PORT[self.scheme] else f"{host}:{self.port}"

    @property
    def text(self) -> str:
        return f"{self.scheme}://{self.authority}{self.target}"


def read_inet_aton(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address `host` names in inet_aton notation (1 to 4 parts, each decimal, octal
    with a leading 0, or hex with 0x; the last part fills the remaining bytes), or None when
    `host` is not numeric. A numeric-looking host that overflows is a UrlRefused."""
    parts = host.split(".")
    if not all(_NUMERIC_PART.match(part) for part in parts) or len(parts) > 4:
        return None
    values: list[int] = []
    for part in parts:
        if part[:2].lower() == "0x":
            values.append(int(part[2:] or "0", 16))
        elif len(part) > 1 and part.startswith("0"):
            if not all(c in "01234567" for c in part):
                raise UrlRefused("ambiguous_host", f"host {host!r} has an invalid octal part")
            values.append(int(part, 8))
        else:
            values.append(int(part, 10))
    *head, last = values
    if any(v > 0xFF for v in head) or last >= 256 ** (5 - len(values)):
        raise UrlRefused("ambiguous_host", f"host {host!r} is an out-of-range IPv4 address")
    number = last
    for i, value in enumerate(head):
        number |= value << (8 * (3 - i))
    return ipaddress.IPv4Address(number)


def _ends_in_number(host: str) -> bool:
    # WHATWG: a host whose last label is numeric is an IPv4 address or invalid, never a name.
    return bool(_NUMERIC_PART.match(host.rsplit(".", 1)[-1]))


def _parse_host(raw: str) -> tuple[str, IPAddress | None]:
    if raw.startswith("["):
        if not raw.endswith("]"):
            raise UrlRefused("bad_url", "an IPv6 host must be written [address]")
        inner = raw[1:-1]
        if "%" in inner:
            raise UrlRefused("zone_id", "IPv6 zone ids (fe80::1%eth0) are refused")
        try:
            v6 = ipaddress.IPv6Address(inner)
        except ValueError:
            raise UrlRefused("bad_url", f"{inner!r} is not an IPv6 address") from None
        return str(v6), v6
    if "%" in raw:
        raise UrlRefused("bad_url", "a percent-encoded or zone-id host is refused")
    if ":" in raw or "[" in raw or "]" in raw:
        raise UrlRefused("bad_url", "an IPv6 host must be written in brackets")
    host = raw.lower()
    if host.endswith("."):
        host = host[:-1]
    if not host:
        raise UrlRefused("bad_url", "the URL has no host")
    if _ends_in_number(host):
        v4 = read_inet_aton(host)
        if v4 is None:
            raise UrlRefused("ambiguous_host", f"host {raw!r} ends in a number but is no IPv4")
        return str(v4), v4
    labels = host.split(".")
    if len(host) > 253 or not all(_LABEL.match(label) for label in labels):
        raise UrlRefused("bad_url", f"host {raw!r} is not a valid DNS name (use punycode)")
    return host, None


def parse_http_url(text: object) -> HttpUrl:
    """The URL `text` names, read strictly; UrlRefused (with a reason code) otherwise."""
    if not isinstance(text, str) or not text:
        raise UrlRefused("bad_url", "the URL must be a non-empty string")
    if len(text) > MAX_URL_LENGTH:
        raise UrlRefused("bad_url", f"the URL is longer than {MAX_URL_LENGTH} characters")
    if _FORBIDDEN.search(text):
        raise UrlRefused(
            "bad_url", "the URL holds whitespace, a backslash or non-ASCII: percent-encode it"
        )
    scheme_match = _SCHEME.match(text)
    scheme = scheme_match.group(1).lower() if scheme_match else ""
    if scheme not in _DEFAULT_PORT:
        raise UrlRefused("bad_scheme", "only http:// and https:// URLs can be fetched")
    rest = text[scheme_match.end() :] if scheme_match else ""
    if not rest.startswith("//"):
        raise UrlRefused("bad_url", f"write the URL as {scheme}://host/path")
    rest = rest[2:]
    end = min((i for i in (rest.find(c) for c in "/?#") if i != -1), default=len(rest))
    authority, remainder = rest[:end], rest[end:]
    remainder = remainder.split("#", 1)[0]
    if "@" in authority:
        raise UrlRefused("userinfo", "URLs with a user name or password (user@host) are refused")
    host_part, port = authority, _DEFAULT_PORT[scheme]
    colon = authority.rfind(":")
    if colon != -1 and "]" not in authority[colon:]:
        host_part, port_text = authority[:colon], authority[colon + 1 :]
        if not _PORT.match(port_text) or not 0 < int(port_text) <= 65535:
            raise UrlRefused("bad_port", f"port {port_text!r} is not a number in 1-65535")
        port = int(port_text)
    host, address = _parse_host(host_part)
    target = remainder if remainder.startswith("/") else "/" + remainder
    return HttpUrl("https" if scheme == "https" else "http", host, port, target, address)


def host_matches(host: str, patterns: tuple[str, ...]) -> bool:
    """True when `host` (as `parse_http_url` gives it) is one of `patterns`: an exact host,
    or `*.example.com` for any name strictly below example.com. IP literals match exactly."""
    for pattern in patterns:
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]) and len(host) > len(pattern) - 1:
                return True
        elif host == pattern:
            return True
    return False


def normal_host_pattern(pattern: str) -> str:
    """A host allow-list entry in the form `host_matches` compares, or ValueError."""
    wildcard = pattern.startswith("*.")
    body = pattern[2:] if wildcard else pattern
    try:
        parsed = parse_http_url(f"http://{body}/")
    except UrlRefused as exc:
        raise ValueError(f"host pattern {pattern!r}: {exc.message}") from None
    if parsed.port != 80 or parsed.target != "/" or (wildcard and parsed.address is not None):
        raise ValueError(
            f"host pattern {pattern!r} must be a host name, '*.domain' or an IP address, "
            "without scheme, port or path"
        )
    return f"*.{parsed.host}" if wildcard else parsed.host
