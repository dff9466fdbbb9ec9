"""Serving the console with uvicorn in the foreground, announcing its URL once it listens."""

from __future__ import annotations

import signal
import sys
from types import FrameType
from urllib.parse import quote

import uvicorn

from governance import StartedServer, bind_socket
from harness.console._app import create_app
from harness.console._errors import ConsoleStartError
from harness.console._state import ConsoleState

SHUTDOWN_GRACE = 2  # seconds in-flight requests get (open event streams are cut after it)


def sign_in_url(host: str, port: int, token: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/login?token={quote(token, safe='')}"


def serve_console(state: ConsoleState, *, loopback_only: bool) -> None:
    """Serve until SIGINT/SIGTERM. The one stdout line is printed (and flushed) when uvicorn
    accepts connections, so whoever reads it can connect at once."""
    config = state.config
    sock = bind_socket(config.host, config.port, ConsoleStartError)
    host, port = sock.getsockname()[:2]
    url = sign_in_url(config.host, port, config.token)

    def announce() -> None:
        print(f"Proctor console: {url}", flush=True)

    app = create_app(state, loopback_only=loopback_only)
    server = StartedServer(
        uvicorn.Config(
            app,
            lifespan="off",
            ws="none",
            http="h11",
            log_level="warning",
            timeout_graceful_shutdown=SHUTDOWN_GRACE,
        ),
        on_started=announce,
    )
    # uvicorn shuts down gracefully on SIGINT/SIGTERM, then raises the signal again for the
    # handler it found. Ours ends the serving here, so the caller still closes the console
    # (withdrawing the turns that wait) and the process exits 0, not killed by the signal.
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run(sockets=[sock])
    except _Stopped:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sock.close()
        print("Proctor console stopped.", file=sys.stderr, flush=True)


class _Stopped(Exception):
    pass


def _stop(signum: int, frame: FrameType | None) -> None:
    raise _Stopped
