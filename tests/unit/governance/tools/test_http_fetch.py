"""`http.get` against real HTTP servers on loopback, reached only through the test-only route
(or a connector stub that records where the socket went). Never an outside address."""

from __future__ import annotations

import itertools
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from governance.core._contracts import Principal, ToolCall
from governance.tools import builtin_tools
from governance.tools._http_fetch import HttpFetcher
from governance.tools._local import ToolExecutionError

# path -> (status, headers, body)
Page = tuple[int, dict[str, str], bytes]


class _Server:
    def __init__(self, pages: dict[str, Page]) -> None:
        self.pages = pages
        self.requests: list[tuple[str, str | None]] = []  # (path, Host header)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests.append((self.path, self.headers.get("Host")))
                status, headers, body = server.pages.get(self.path, (404, {}, b""))
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server({})
    yield s
    s.close()


def _html(body: str) -> Page:
    return (200, {"Content-Type": "text/html; charset=utf-8"}, body.encode())


def _routed(server: _Server, **settings: object) -> HttpFetcher:
    """Reach `docs.test` (port 80) at the loopback server; any other host is refused."""
    return HttpFetcher(
        resolver=_no_dns,
        _loopback_routes_for_tests={("docs.test", 80): server.port},
        **settings,  # type: ignore[arg-type]
    )


def _no_dns(host: str, port: int) -> list[str]:
    raise OSError(f"no DNS in tests ({host})")


def test_a_page_is_fetched_with_its_final_url_status_type_and_readable_text(
    server: _Server,
) -> None:
    server.pages["/guide"] = _html(
        "<html><head><title>Guide</title><style>p{}</style><script>alert(1)</script></head>"
        "<body><h1>Returns</h1><p>Refunds take <b>5</b> days.</p><!-- hidden --></body></html>"
    )
    result = _routed(server).fetch("http://docs.test/guide#top")
    assert result == {
        "url": "http://docs.test/guide",
        "status": 200,
        "content_type": "text/html",
        "text": "Guide\nReturns\nRefunds take 5 days.",
        "truncated": False,
    }
    assert server.requests == [("/guide", "docs.test")]


def test_dns_rebinding_fails_because_the_socket_goes_to_the_address_that_was_validated(
    server: _Server,
) -> None:
    server.pages["/"] = (200, {"Content-Type": "text/plain"}, b"public page")
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])
    resolved: list[str] = []
    connected: list[tuple[str, int]] = []

    def rebinding(host: str, port: int) -> list[str]:
        resolved.append(host)
        return next(answers)

    def recording(address: str, port: int, timeout: float) -> socket.socket:
        connected.append((address, port))
        # Stands in for the public host: the bytes come from the loopback server.
        return socket.create_connection(("127.0.0.1", server.port), timeout=timeout)

    fetcher = HttpFetcher(resolver=rebinding, connector=recording)
    assert fetcher.fetch("http://rebind.example/")["text"] == "public page"
    assert resolved == ["rebind.example"]  # resolved once: the second answer is never asked
    assert connected == [("93.184.216.34", 80)]  # never 127.0.0.1
    assert server.requests == [("/", "rebind.example")]


def test_a_name_with_any_refused_address_among_its_answers_is_refused_without_connecting() -> None:
    connected: list[str] = []

    def connector(address: str, port: int, timeout: float) -> socket.socket:
        connected.append(address)
        raise OSError("unreachable")

    fetcher = HttpFetcher(
        resolver=lambda host, port: ["93.184.216.34", "10.0.0.7"], connector=connector
    )
    with pytest.raises(ToolExecutionError) as refused:
        fetcher.fetch("http://mixed.example/")
    assert refused.value.reason == "private"
    assert connected == []


@pytest.mark.parametrize("answer", ["127.0.0.1", "::1", "fe80::1%eth0", "::ffff:10.0.0.1", "x"])
def test_a_resolver_answer_that_is_not_public_is_refused(answer: str) -> None:
    fetcher = HttpFetcher(resolver=lambda host, port: [answer])
    with pytest.raises(ToolExecutionError) as refused:
        fetcher.fetch("http://evil.example/")
    assert refused.value.reason in {"loopback", "zone_id", "ipv4_mapped", "unresolvable"}


def test_a_name_that_does_not_resolve_is_refused() -> None:
    with pytest.raises(ToolExecutionError) as refused:
        HttpFetcher(resolver=_no_dns).fetch("http://nowhere.example/")
    assert refused.value.reason == "unresolvable"


def test_same_host_redirects_are_followed_and_the_final_url_is_reported(server: _Server) -> None:
    server.pages["/old"] = (301, {"Location": "/mid"}, b"")
    server.pages["/mid"] = (302, {"Location": "http://docs.test/new"}, b"")
    server.pages["/new"] = (200, {"Content-Type": "text/plain"}, b"moved here")
    result = _routed(server).fetch("http://docs.test/old")
    assert (result["url"], result["text"]) == ("http://docs.test/new", "moved here")


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("http://127.0.0.1/admin", "redirect_off_allow_list"),
        ("http://169.254.169.254/latest/meta-data/", "redirect_off_allow_list"),
        ("http://evil.example/", "redirect_off_allow_list"),
        ("http://docs.test:8080/", "port_not_allowed"),
        ("gopher://docs.test/", "bad_scheme"),
        ("http://user@docs.test/", "userinfo"),
    ],
)
def test_a_redirect_that_leaves_the_host_or_the_rules_is_not_followed(
    server: _Server, location: str, reason: str
) -> None:
    server.pages["/r"] = (302, {"Location": location}, b"")
    with pytest.raises(ToolExecutionError) as refused:
        _routed(server).fetch("http://docs.test/r")
    assert refused.value.reason == reason
    assert [path for path, _ in server.requests] == ["/r"]


def test_a_redirect_to_an_allow_listed_host_is_judged_again_and_refused_if_private(
    server: _Server,
) -> None:
    server.pages["/r"] = (302, {"Location": "http://cdn.example.net/x"}, b"")
    fetcher = HttpFetcher(
        resolver=lambda host, port: ["192.168.0.9"],
        redirect_hosts=("*.example.net",),
        _loopback_routes_for_tests={("docs.test", 80): server.port},
    )
    with pytest.raises(ToolExecutionError) as refused:
        fetcher.fetch("http://docs.test/r")
    assert refused.value.reason == "private"


def test_a_redirect_loop_stops_after_the_maximum(server: _Server) -> None:
    server.pages["/loop"] = (302, {"Location": "/loop"}, b"")
    with pytest.raises(ToolExecutionError) as refused:
        _routed(server, max_redirects=3).fetch("http://docs.test/loop")
    assert refused.value.reason == "too_many_redirects"
    assert len(server.requests) == 4


def test_a_body_over_the_cap_is_cut_at_the_cap_and_marked_truncated(server: _Server) -> None:
    server.pages["/big"] = (200, {"Content-Type": "text/plain"}, b"a" * 100_000)
    result = _routed(server, max_bytes=1000).fetch("http://docs.test/big")
    assert result["text"] == "a" * 1000
    assert result["truncated"] is True


@pytest.mark.parametrize(
    "content_type", ["application/octet-stream", "image/png", "", "text/htmlx", "text/xml"]
)
def test_a_content_type_outside_the_allow_list_is_refused(
    server: _Server, content_type: str
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    server.pages["/f"] = (200, headers, b"\x89PNG")
    with pytest.raises(ToolExecutionError) as refused:
        _routed(server).fetch("http://docs.test/f")
    assert refused.value.reason == "content_type_refused"


def test_the_content_type_allow_list_is_configurable(server: _Server) -> None:
    server.pages["/f"] = (200, {"Content-Type": "text/csv"}, b"a,b")
    fetcher = _routed(server, allowed_content_types=("text/csv",))
    assert fetcher.fetch("http://docs.test/f")["text"] == "a,b"


def test_a_compressed_body_is_refused_because_its_size_cannot_be_capped(server: _Server) -> None:
    server.pages["/z"] = (200, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}, b"x")
    with pytest.raises(ToolExecutionError) as refused:
        _routed(server).fetch("http://docs.test/z")
    assert refused.value.reason == "encoded_response"


def test_a_fetch_past_its_deadline_is_refused_as_a_timeout(server: _Server) -> None:
    server.pages["/slow"] = (200, {"Content-Type": "text/plain"}, b"late")
    ticks = iter([0.0, 0.5, 11.0, 11.0, 11.0, 11.0, 11.0, 11.0])
    fetcher = _routed(server, clock=lambda: next(ticks))
    with pytest.raises(ToolExecutionError) as refused:
        fetcher.fetch("http://docs.test/slow")
    assert refused.value.reason == "timeout"


def test_a_server_that_never_answers_times_out() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        port = listener.getsockname()[1]
        fetcher = HttpFetcher(
            timeout_seconds=0.3, _loopback_routes_for_tests={("docs.test", 80): port}
        )
        with pytest.raises(ToolExecutionError) as refused:
            fetcher.fetch("http://docs.test/")
        assert refused.value.reason == "timeout"
    finally:
        listener.close()


def test_without_the_test_route_the_same_loopback_server_is_refused(server: _Server) -> None:
    server.pages["/"] = (200, {"Content-Type": "text/plain"}, b"secret")
    with pytest.raises(ToolExecutionError) as refused:
        HttpFetcher().fetch(f"http://127.0.0.1:{server.port}/")
    assert refused.value.reason == "port_not_allowed"
    with pytest.raises(ToolExecutionError):
        HttpFetcher(allowed_ports=(server.port,)).fetch(f"http://127.0.0.1:{server.port}/")
    assert server.requests == []


def test_the_test_route_covers_exactly_its_host_and_port(server: _Server) -> None:
    server.pages["/"] = (200, {"Content-Type": "text/plain"}, b"secret")
    fetcher = _routed(server)
    for url in ("http://docs.test:8080/", "https://docs.test/", "http://other.test/"):
        with pytest.raises(ToolExecutionError):
            fetcher.fetch(url)
    assert server.requests == []


def test_configuration_and_environment_cannot_enable_the_loopback_allowance(
    server: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.pages["/"] = (200, {"Content-Type": "text/plain"}, b"secret")
    for name in ("PROCTOR_HTTP_ALLOW_LOOPBACK", "PROCTOR_LOOPBACK_ROUTES", "NO_PROXY"):
        monkeypatch.setenv(name, f"127.0.0.1:{server.port}")
    source = builtin_tools(tmp_path)
    call = ToolCall(
        call_id="c1",
        tool="http.get",
        arguments={"url": f"http://127.0.0.1:{server.port}/"},
        run_id="r1",
        principal=Principal(actor="a", agent="b", team="c"),
    )
    result = source.call(call)
    assert (result.outcome, result.reason) == ("failed", "port_not_allowed")
    assert server.requests == []
    # The tool's arguments cannot carry it either: unknown arguments are refused.
    extra = source.validate_arguments("http.get", {"url": "http://x.test/", "routes": {}})
    assert extra is not None
    # Nothing outside the tests and the fixture server names the allowance.
    root = Path(__file__).resolve().parents[4]
    naming = [
        path.relative_to(root).as_posix()
        for folder in ("governance", "harness")
        for path in (root / folder).rglob("*.py")
        if "_loopback_routes_for_tests" in path.read_text(encoding="utf-8")
    ]
    assert naming == ["governance/tools/_http_fetch.py"] or sorted(naming) == sorted(
        ["governance/tools/_http_fetch.py", "harness/_http_fixture.py"]
    )
    assert os.environ["PROCTOR_HTTP_ALLOW_LOOPBACK"]  # the variables really were set


class _RawServer:
    """A loopback server that answers every connection with `reply(conn)` (raw bytes)."""

    def __init__(self, reply: Callable[[socket.socket], None]) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.port = self.listener.getsockname()[1]
        self._reply = reply
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conn.recv(65536)
                try:
                    self._reply(conn)
                except OSError:
                    pass  # the fetch hung up, as it should

    def fetcher(self, **settings: object) -> HttpFetcher:
        return HttpFetcher(
            _loopback_routes_for_tests={("docs.test", 80): self.port},
            **settings,  # type: ignore[arg-type]
        )

    def close(self) -> None:
        self.listener.close()


@contextmanager
def _raw(reply: Callable[[socket.socket], None]) -> Iterator[_RawServer]:
    s = _RawServer(reply)
    try:
        yield s
    finally:
        s.close()


def _drip(head: bytes, drip: bytes, tail: bytes) -> Callable[[socket.socket], None]:
    def reply(conn: socket.socket) -> None:
        conn.sendall(head)
        for byte in drip:
            conn.sendall(bytes([byte]))
            time.sleep(0.005)
        conn.sendall(tail)

    return reply


_PLAIN = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"


@pytest.mark.parametrize(
    "reply",
    [
        _drip(b"HTTP/1.1 200 OK", b" " * 60, b"\r\nContent-Type: text/plain\r\n"
              b"Content-Length: 2\r\n\r\nhi"),
        _drip(_PLAIN + b"X-A: ", b"a" * 60, b"\r\nContent-Length: 2\r\n\r\nhi"),
        _drip(_PLAIN + b"Transfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n", b"0" * 60,
              b"2\r\nyo\r\n0\r\n\r\n"),
    ],
    ids=["status line", "header", "chunk size"],
)  # fmt: skip
def test_a_server_dripping_bytes_cannot_stretch_the_one_deadline(
    reply: Callable[[socket.socket], None],
) -> None:
    """Each read is given only the time left: the clock advances a second per look at it, so
    a fetch that reads the drip byte by byte must run out of its ten seconds."""
    ticks = itertools.count()
    with _raw(reply) as server:
        fetcher = server.fetcher(timeout_seconds=10.0, clock=lambda: float(next(ticks)))
        with pytest.raises(ToolExecutionError) as refused:
            fetcher.fetch("http://docs.test/")
    assert refused.value.reason == "timeout"


@pytest.mark.parametrize(
    ("before_body", "reason"),
    [
        (b"HTTP/1.1 100 Continue\r\n\r\n" * 8000 + _PLAIN, "headers_too_large"),
        (_PLAIN + b"".join(b"X-%d: %s\r\n" % (i, b"v" * 2000) for i in range(90)),
         "headers_too_large"),
    ],
    ids=["endless 100 Continue", "many long headers"],
)  # fmt: skip
def test_bytes_before_the_body_count_against_a_cap(before_body: bytes, reason: str) -> None:
    def reply(conn: socket.socket) -> None:
        conn.sendall(before_body + b"Content-Length: 2\r\n\r\nhi")

    with _raw(reply) as server, pytest.raises(ToolExecutionError) as refused:
        server.fetcher().fetch("http://docs.test/")
    assert refused.value.reason == reason


def test_chunk_framing_counts_against_a_cap_beside_the_body() -> None:
    chunk = b"1;" + b"x" * 4000 + b"\r\na\r\n"

    def reply(conn: socket.socket) -> None:
        conn.sendall(_PLAIN + b"Transfer-Encoding: chunked\r\n\r\n" + chunk * 200 + b"0\r\n\r\n")

    with _raw(reply) as server, pytest.raises(ToolExecutionError) as refused:
        server.fetcher(max_bytes=1000).fetch("http://docs.test/")
    assert refused.value.reason == "framing_too_large"


@pytest.mark.parametrize("charset", ["idna", "punycode", "utf-7"])
def test_a_charset_off_the_allow_list_is_read_as_utf8(server: _Server, charset: str) -> None:
    server.pages["/c"] = (200, {"Content-Type": f"text/plain; charset={charset}"}, b"ab+AGE-\xff")
    assert _routed(server).fetch("http://docs.test/c")["text"] == "ab+AGE-\ufffd"


def test_markup_that_made_the_standard_parser_raise_is_read(server: _Server) -> None:
    server.pages["/h"] = _html("<![<![<![ x <p>kept</p>")
    assert _routed(server).fetch("http://docs.test/h")["text"] == "kept"
