"""Every request passes here first: Host, session, CSRF, Origin, and the security headers.

A pure ASGI middleware (not BaseHTTPMiddleware) so the live event stream is never buffered.
What it enforces:
- Host: on a loopback bind only loopback names are served (a DNS-rebinding page gets 421).
- Session: every path but /login and /static needs the signed cookie (pages redirect to
  /login, anything else gets 401).
- State changes (any method but GET/HEAD): an Origin or Sec-Fetch-Site that is not this
  console's is refused, and the session's CSRF value must come back as the `X-CSRF-Token`
  header or the `csrf` field of a urlencoded form (the body is read once here, capped, and
  handed on unchanged).
- Headers: a strict CSP (no inline script or style, no external URL), nosniff, no referrer
  (the login URL carries the token), no framing, no caching of pages.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from governance import Clock
from harness.console._session import COOKIE, Session, SessionCodec

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    # same-origin: the sign-in URL (it carries the token) never leaves in a Referer, and the
    # browser still sends our own Origin on a POST (with no-referrer it sends `null`, and over
    # plain HTTP on another host no Sec-Fetch-Site either: nobody could sign in).
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
)
OPEN_PATHS = ("/login", "/static/", "/favicon.ico")
SAFE_METHODS = ("GET", "HEAD")
MAX_FORM_BYTES = 1 << 20
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")


class ConsoleGuard:
    def __init__(
        self,
        app: ASGIApp,
        *,
        codec: SessionCodec,
        clock: Clock,
        loopback_only: bool,
        bound_host: str = "127.0.0.1",
    ) -> None:
        self._app = app
        self._codec = codec
        self._clock = clock
        self._loopback_only = loopback_only
        # The loopback names, and the address the console was bound to (127.0.0.2, ::1 ...).
        bound = (
            f"[{bound_host}]"
            if ":" in bound_host and not bound_host.startswith("[")
            else bound_host
        )
        self._hosts = frozenset((*LOOPBACK_NAMES, bound))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        send = _with_security_headers(send)
        headers = _headers(scope)
        if self._loopback_only and _host_name(headers.get("host", "")) not in self._hosts:
            await _refuse(send, 421, "this console answers only on its loopback address")
            return
        method = scope["method"]
        path = scope["path"]
        if method not in SAFE_METHODS and not _same_origin(headers):
            await _refuse(send, 403, "cross-origin request refused")
            return
        session = self._codec.read(_cookie(headers.get("cookie", ""), COOKIE), self._now())
        scope.setdefault("state", {})["session"] = session
        if path.startswith(OPEN_PATHS):
            if method not in SAFE_METHODS:  # sign-in: capped like every other body
                body = await _capped_body(receive)
                if body is None:
                    await _refuse(send, 413, "request body too large")
                    return
                receive = _replay(body)
            await self._app(scope, receive, send)
            return
        if session is None:
            if method in SAFE_METHODS and "text/html" in headers.get("accept", "text/html"):
                target = path + (
                    "?" + scope["query_string"].decode() if scope["query_string"] else ""
                )
                await _redirect(send, "/login?next=" + quote(target, safe=""))
            else:
                await _refuse(send, 401, "sign in first: open the URL `proctor console` printed")
            return
        if method not in SAFE_METHODS:
            body, ok = await _checked_body(receive, headers, session)
            if not ok:
                await _refuse(send, 403, "missing or wrong CSRF value: reload the page")
                return
            receive = _replay(body)
        await self._app(scope, receive, send)

    def _now(self) -> int:
        return int(self._clock.now().timestamp())


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def _host_name(host: str) -> str:
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if ":" in host else host


def _same_origin(headers: dict[str, str]) -> bool:
    """No Origin/Sec-Fetch-Site saying otherwise: a browser sends them on every cross-site
    POST, so their absence means a non-browser client (which cannot hold the cookie by
    accident); their presence must name this console."""
    site = headers.get("sec-fetch-site")
    if site is not None:
        # Set by the browser itself; authoritative. Origin can be "null" on a same-origin form
        # POST under `Referrer-Policy: no-referrer`, so it is consulted only without this.
        return site == "same-origin"  # "none" (typed or bookmarked) never posts a form
    origin = headers.get("origin")
    if origin is None:
        return True
    if origin == "null":
        return False
    return urlsplit(origin).netloc == headers.get("host", "")


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, sep, value = part.strip().partition("=")
        if sep and key == name:
            return value
    return None


async def _capped_body(receive: Receive) -> bytes | None:
    """The whole body, or None past MAX_FORM_BYTES (or when the client went away)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _checked_body(
    receive: Receive, headers: dict[str, str], session: Session
) -> tuple[bytes, bool]:
    body = await _capped_body(receive)
    if body is None:
        return b"", False
    sent = headers.get("x-csrf-token")
    if sent is None and headers.get("content-type", "").startswith(
        "application/x-www-form-urlencoded"
    ):
        values = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).get("csrf")
        sent = values[0] if values and len(values) == 1 else None
    return body, sent is not None and hmac.compare_digest(sent.encode(), session.csrf.encode())


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


def _with_security_headers(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            names = {k.lower() for k, _ in message.get("headers", [])}
            extra = [(k, v) for k, v in SECURITY_HEADERS if k not in names]
            message["headers"] = [*message.get("headers", []), *extra]
        await send(message)

    return wrapped


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _redirect(send: Send, location: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [(b"location", location.encode("latin-1")), (b"content-length", b"0")],
        }
    )
    await send({"type": "http.response.body", "body": b""})
