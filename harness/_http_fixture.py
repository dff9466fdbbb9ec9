"""The pages a scenario declares (`setup.http_pages`), served by a real HTTP server on loopback.

One server per process (a suite worker), started on the first scenario that declares pages
and kept for the rest: only its page table changes from scenario to scenario. `http.get` runs
its real code path end to end (request, headers, streaming, caps, HTML text); the one thing it
is told is the tool's test-only allowance, which sends an exact (host, 80) to this server's
port on 127.0.0.1. The allowance is bound to exactly the hosts the running scenario declares
(all under reserved test TLDs, checked when the file loads), and emptied after it, so any
other URL is refused as it is in production. The ephemeral port stays here: the URL the tool
reports is the one the agent asked for, so traces never show it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from governance.tools import HttpFetcher
from harness._scenario import HttpPage, fixture_page_key

if TYPE_CHECKING:
    from http.server import ThreadingHTTPServer

Resolver = Callable[[str, int], Sequence[str]]
_PORT = 80  # the only port a declared page may name (checked at load)


class HttpFixture:
    """The loopback server and the routes `http.get` may take to it (none between scenarios)."""

    def __init__(self) -> None:
        self._pages: dict[tuple[str, str], HttpPage] = {}
        self._routes: dict[tuple[str, int], int] = {}  # read by the fetcher, owned here
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def fetcher(self, resolver: Resolver) -> HttpFetcher:
        """An `http.get` fetcher whose only loopback routes are the ones `serve` sets."""
        return HttpFetcher(resolver=resolver, _loopback_routes_for_tests=self._routes)

    def serve(self, pages: Mapping[str, HttpPage]) -> None:
        """Answer with `pages` (URL: page) until `clear`; routes open for their hosts only."""
        self.clear()
        if not pages:
            return
        port = self._start()
        for url, page in pages.items():
            key = fixture_page_key(url)  # "http://host/target": the tool's own spelling
            host, _, target = key.removeprefix("http://").partition("/")
            self._pages[(host, "/" + target)] = page
        self._routes.update({(host, _PORT): port for host, _ in self._pages})

    def clear(self) -> None:
        self._routes.clear()
        self._pages.clear()

    def page(self, host: str, target: str) -> HttpPage | None:
        return self._pages.get((host.lower(), target))

    def _start(self) -> int:
        if self._server is None:
            from http.server import ThreadingHTTPServer  # only a suite with pages pays for it

            self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
            self._server.daemon_threads = True
            # shutdown() waits for the loop's next poll: 0.5 s by default, at the end of a suite.
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.02},
                name="proctor-http-fixture",
                daemon=True,
            )
            self._thread.start()
        return int(self._server.server_address[1])

    def close(self) -> None:
        self.clear()
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None


def _handler(fixture: HttpFixture) -> type:
    from http.server import BaseHTTPRequestHandler

    class _Pages(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
            page = fixture.page(self.headers.get("Host", ""), self.path)
            if page is None:
                self._send(404, "text/plain; charset=utf-8", b"no such fixture page\n")
                return
            body = page.body.encode(_charset(page), errors="replace")
            self._send(page.status, page.content_type, body)

        def _send(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return  # a suite's output is its report, not an access log

    return _Pages


def _charset(page: HttpPage) -> str:
    for param in page.content_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            try:
                "".encode(value.strip().strip('"'))
            except LookupError:
                break
            return value.strip().strip('"')
    return "utf-8"
