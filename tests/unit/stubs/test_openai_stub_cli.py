"""`proctor stub`: prints its URL and models, defaults to loopback, maps failures to exit codes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner

from harness import _exit_codes as codes
from harness.cli import _stub
from harness.cli._app import cli
from stubs.openai_stub import FAULTS, StubStartError


def _fake_run(seen: dict[str, Any], error: BaseException | None = None) -> Callable[..., None]:
    def run(host: str, port: int, *, on_ready: Callable[[str], None]) -> None:
        seen.update(host=host, port=port)
        if error is not None:
            raise error
        on_ready(f"http://{host}:{port}/v1")

    return run


def test_the_stub_listens_on_loopback_8766_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(_stub, "run_stub", _fake_run(seen))
    result = CliRunner().invoke(cli, ["stub"])
    assert result.exit_code == codes.OK, result.output
    assert seen == {"host": "127.0.0.1", "port": 8766}
    assert "http://127.0.0.1:8766/v1" in result.output
    assert "warning" not in result.output


def test_the_stub_prints_every_model_it_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_stub, "run_stub", _fake_run({}))
    output = CliRunner().invoke(cli, ["stub", "--port", "9001"]).output
    listed = [line.strip() for line in output.splitlines() if line.startswith("  ")]
    assert listed == ["proctor-stub-1", *(f"proctor-stub-1:{f}" for f in FAULTS)]
    assert "X-Stub-Fault" in output


def test_a_non_loopback_host_is_served_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(_stub, "run_stub", _fake_run(seen))
    result = CliRunner().invoke(cli, ["stub", "--host", "0.0.0.0"])
    assert seen["host"] == "0.0.0.0"
    assert "warning: 0.0.0.0 is not loopback" in result.output


@pytest.mark.parametrize("host", ["localhost", "::1", "127.0.0.2"])
def test_loopback_hosts_get_no_warning(monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    monkeypatch.setattr(_stub, "run_stub", _fake_run({}))
    assert "warning" not in CliRunner().invoke(cli, ["stub", "--host", host]).output


def test_a_stub_that_fails_to_start_for_another_reason_exits_70_with_a_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    error = StubStartError("cannot listen on 127.0.0.1:8765: too many open files")
    monkeypatch.setattr(_stub, "run_stub", _fake_run({}, error))
    result = CliRunner().invoke(cli, ["stub"])
    assert result.exit_code == codes.INTERNAL
    assert "error: cannot listen on 127.0.0.1:8765" in result.output
    assert "Traceback" not in result.output


def test_ctrl_c_stops_the_stub_cleanly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_stub, "run_stub", _fake_run({}, KeyboardInterrupt()))
    result = CliRunner().invoke(cli, ["stub"])
    assert result.exit_code == codes.OK
    assert "stopped." in result.output


@pytest.mark.parametrize("port", ["-1", "65536", "http"])
def test_a_bad_port_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, port: str) -> None:
    ran: dict[str, Any] = {}
    monkeypatch.setattr(_stub, "run_stub", _fake_run(ran))
    result = CliRunner().invoke(cli, ["stub", "--port", port])
    assert result.exit_code == codes.USAGE
    assert ran == {}
