"""How an endpoint URL is shown: `scheme://host[:port]`, nothing else.

A gateway URL may carry a credential anywhere past its host (`/gw/<team token>/v1`,
`?code=...`, `user:pass@`, `#access_token=...`), and whatever names the endpoint ends up in
provider errors, traces, reports and cassettes. Only the origin is shown, everywhere.
"""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["endpoint_host", "endpoint_origin", "scrub_endpoint"]

# A path this short (`/v1`) carries no token, and masking it would mangle every message that
# names a route; anything longer may be `/gw/<token>` and is masked wherever it is quoted.
_PLAIN_PATH_CHARS = 3
_HIDDEN = "[REDACTED:url_part]"


def endpoint_host(url: str) -> str:
    """The host name alone (live reports, cassette headers): no scheme, port, path, query or
    userinfo — a stub's port changes with every run, and the rest may carry a token."""
    try:
        return urlsplit(url.strip()).hostname or "unknown-host"
    except ValueError:
        return "unknown-host"


def endpoint_origin(url: str) -> str:
    """`scheme://host[:port]` of `url`: no userinfo, path, query or fragment."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
        port = parts.port
    except ValueError:  # an unbalanced `[` or a port that is not a number
        return "(an unparsable endpoint URL)"
    if not host:
        return "(an endpoint URL without a host)"
    shown = f"[{host}]" if ":" in host else host
    scheme = parts.scheme or "http"
    return f"{scheme}://{shown}" + (f":{port}" if port is not None else "")


def scrub_endpoint(text: str, url: str) -> str:
    """`text` with `url` shown as its origin, and its userinfo, query, fragment and any
    non-trivial path masked wherever they are quoted on their own (an SDK or vendor message
    may name the route it tried)."""
    stripped = url.strip()
    for variant in sorted({stripped, stripped.rstrip("/")}, key=len, reverse=True):
        if variant:
            text = text.replace(variant, endpoint_origin(url))
    try:
        parts = urlsplit(stripped)
    except ValueError:
        return text
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    path = parts.path.rstrip("/")
    hidden = [userinfo, parts.query, parts.fragment]
    if len(path.strip("/")) > _PLAIN_PATH_CHARS:
        hidden.append(path)
    for part in sorted((p for p in hidden if p), key=len, reverse=True):
        text = text.replace(part, _HIDDEN)
    return text
