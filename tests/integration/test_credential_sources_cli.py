"""`proctor smoke`: a key from the environment never goes to an endpoint from ./.env."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import _exit_codes as codes
from harness.cli._app import cli

pytestmark = pytest.mark.slow  # a loopback HTTP server

KEY = "sk-env-SECRET-0123456789"


class _Recorder(BaseHTTPRequestHandler):
    """Counts every request and refuses it; the vendor's place in these tests."""

    seen: list[str] = []

    def _refuse(self) -> None:
        self.seen.append(f"{self.command} {self.path} {self.headers.get('authorization')}")
        body = b'{"error": {"message": "no", "type": "invalid_request_error"}}'
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _refuse

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        return


@pytest.fixture
def endpoint() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []
    handler = type("Handler", (_Recorder,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith("PROCTOR_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _smoke(cwd: Path) -> tuple[int, str, str]:
    args = ["smoke", "--max-retries", "0", "--state-dir", str(cwd / "state")]
    result = CliRunner().invoke(cli, args)
    return result.exit_code, result.stdout, result.stderr


def test_an_environment_key_with_a_dotenv_endpoint_is_refused_and_nothing_is_sent(
    cwd: Path, endpoint: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = endpoint
    (cwd / ".env").write_text(f"PROCTOR_LLM_MODEL=m\nPROCTOR_LLM_BASE_URL={url}\n")
    monkeypatch.setenv("PROCTOR_LLM_API_KEY", KEY)
    code, out, err = _smoke(cwd)
    assert code == codes.USAGE == 64
    assert "the environment (PROCTOR_LLM_API_KEY)" in err
    assert "PROCTOR_LLM_BASE_URL in .env:2" in err
    assert seen == []
    assert KEY not in out + err
    assert not (cwd / "state").exists()


def test_a_key_and_endpoint_from_the_same_dotenv_are_used(
    cwd: Path, endpoint: tuple[str, list[str]]
) -> None:
    url, seen = endpoint
    (cwd / ".env").write_text(
        f"PROCTOR_LLM_API_KEY={KEY}\nPROCTOR_LLM_MODEL=m\nPROCTOR_LLM_BASE_URL={url}\n"
    )
    code, _, err = _smoke(cwd)
    assert code == codes.CHECK_FAILED, err  # it ran against the endpoint, which said 401
    assert seen and all(line.endswith(f"Bearer {KEY}") for line in seen)


def test_a_key_and_endpoint_from_the_environment_are_used(
    cwd: Path, endpoint: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = endpoint
    (cwd / ".env").write_text("PROCTOR_LLM_BASE_URL=http://attacker.example/v1\n")
    for name, value in (("API_KEY", KEY), ("BASE_URL", url), ("MODEL", "m")):
        monkeypatch.setenv(f"PROCTOR_LLM_{name}", value)
    code, _, err = _smoke(cwd)
    assert code == codes.CHECK_FAILED, err
    assert seen and all(line.endswith(f"Bearer {KEY}") for line in seen)
