"""A throwaway stand-in for `proctor console`, used ONLY by test_fixture_selftest.py.

It takes the same options, prints the same announcement line and serves a login form that
sets a per-operator session cookie, so the fixtures (start, read the line, log in, separate
operators, screenshot, stop) are proven before the real console exists. Not a console: it
checks nothing but the token. `--fail-at-start MESSAGE` exits 3 with MESSAGE on stderr before
announcing; `--silent` never announces; `--announce-token` announces another token;
`--ignore-sigterm` must be killed.
"""

from __future__ import annotations

import argparse
import html
import secrets
import signal
import sys
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

SESSIONS: dict[str, str] = {}  # cookie value -> operator
TOKEN = ""

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>{title}</title></head>
<body>{body}</body></html>"""


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        url = urlparse(self.path)
        if url.path == "/login":
            if parse_qs(url.query).get("token") != [TOKEN]:
                self._send(403, PAGE.format(title="Forbidden", body="<p>bad token</p>"))
                return
            form = (
                '<form method="post" action="/login"><label>Operator '
                '<input name="operator" required></label>'
                f'<input type="hidden" name="token" value="{html.escape(TOKEN)}">'
                '<button type="submit">Sign in</button></form>'
            )
            self._send(200, PAGE.format(title="Sign in", body=form))
            return
        operator = self._operator()
        if operator is None:
            self._redirect(f"/login?token={TOKEN}")
            return
        body = (
            '<nav><a href="/">Agent</a> <a href="/approvals">Approvals</a></nav>'
            f'<main><p id="operator">{html.escape(operator)}</p></main>'
        )
        self._send(200, PAGE.format(title="Fake console", body=body))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        form = parse_qs(self.rfile.read(length).decode("utf-8"))
        operator = form.get("operator", [""])[0].strip()
        if urlparse(self.path).path != "/login" or form.get("token") != [TOKEN] or not operator:
            self._send(403, PAGE.format(title="Forbidden", body="<p>refused</p>"))
            return
        session = secrets.token_urlsafe(16)
        SESSIONS[session] = operator
        self.send_response(303)
        self.send_header("Location", "/")
        self.send_header("Set-Cookie", f"session={session}; HttpOnly; SameSite=Strict; Path=/")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _operator(self) -> str | None:
        cookie = SimpleCookie(self.headers.get("Cookie", ""))
        morsel = cookie.get("session")
        return None if morsel is None else SESSIONS.get(morsel.value)

    def _send(self, status: int, text: str) -> None:
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _redirect(self, location: str) -> None:
        self.send_response(303)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(format % args + "\n")


def main() -> None:
    global TOKEN
    parser = argparse.ArgumentParser()
    parser.add_argument("console")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--token", required=True)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--policy", required=True)
    parser.add_argument("--fail-at-start")
    parser.add_argument("--silent", action="store_true")
    parser.add_argument("--ignore-sigterm", action="store_true")
    parser.add_argument("--announce-token")
    args = parser.parse_args()
    if args.fail_at_start:
        sys.stderr.write(args.fail_at_start + "\n")
        sys.exit(3)
    TOKEN = args.token
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if not args.silent:
        host, port = args.host, server.server_port
        announced = args.announce_token or TOKEN
        print(f"Proctor console: http://{host}:{port}/login?token={announced}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
