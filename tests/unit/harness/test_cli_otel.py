"""`--otel` on the commands that drive the governed loop: documented, a usage error when it
cannot work (a bad OTEL_* variable, the extra missing), and always shut down before the exit."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from governance.telemetry import Telemetry
from harness import _exit_codes as codes
from harness._loop import AgentLoop
from harness.cli._app import cli
from tests.otel_receiver import OtlpReceiver

REPO = Path(__file__).resolve().parents[3]
COMMANDS = ("run", "ask", "serve", "console", "smoke")
# Nothing listens on port 9 (discard) on loopback; the tests that use it record no event, so
# nothing is ever sent there (an exporter retrying in the background would outlive the test).
DEAD_ENDPOINT = "http://127.0.0.1:9"
BLOCK_OPENTELEMETRY = """
import importlib.abc, sys
class NoOpenTelemetry(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, NoOpenTelemetry())
from harness.cli._app import cli
sys.exit(cli.main(sys.argv[1:], prog_name="proctor", standalone_mode=False))
"""


@pytest.fixture(autouse=True)
def no_otel_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PROCTOR_OTEL_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.yaml"
    calls = [{"tool": "orders.lookup", "args": {"order_id": "ORD-0001"}}]
    path.write_text(json.dumps([{"calls": calls}, {"answer": "done"}]), encoding="utf-8")
    return path


@pytest.fixture
def shutdowns(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Telemetry]]:
    """Every Telemetry shut down while the test runs (the real shutdown still runs); no thread
    it started may outlive the test (it would run under the tests that follow)."""
    before = set(threading.enumerate())
    seen: list[Telemetry] = []
    real = Telemetry.shutdown

    def recorded(self: Telemetry, timeout_seconds: float = 5.0) -> None:
        seen.append(self)
        real(self, timeout_seconds)

    monkeypatch.setattr(Telemetry, "shutdown", recorded)
    yield seen
    assert [t.name for t in set(threading.enumerate()) - before if t.is_alive()] == []


def _ask(tmp_path: Path, script: Path, *extra: str, env: dict[str, str] | None = None) -> object:
    args = ["ask", "look it up", "--script", str(script), "--state-dir", str(tmp_path / "state"),
            "--run-id", "r1", *extra]  # fmt: skip
    return CliRunner().invoke(cli, args, env=env)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_governing_command_documents_where_otel_goes_and_what_leaves(command: str) -> None:
    result = CliRunner().invoke(cli, [command, "--help"], terminal_width=400)
    assert result.exit_code == codes.OK
    text = " ".join(result.output.split())
    assert "--otel" in text
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in text and "PROCTOR_OTEL_ENDPOINT" in text
    assert "Nothing secret leaves" in text
    assert "traces and exit codes are the same with or without it" in text
    assert "pip install 'proctor[otel]'" in text


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon"),
        ("PROCTOR_OTEL_ENDPOINT", "localhost:4318"),
    ],
)
def test_a_bad_otel_variable_is_a_usage_error_naming_it_and_nothing_runs(
    tmp_path: Path, script: Path, variable: str, value: str
) -> None:
    result = _ask(tmp_path, script, "--otel", env={variable: value})
    assert result.exit_code == codes.USAGE  # type: ignore[attr-defined]
    assert variable in result.stderr  # type: ignore[attr-defined]
    assert not (tmp_path / "state" / "runs").exists() or not any(
        (tmp_path / "state" / "runs").iterdir()
    )


def test_a_bad_otel_variable_is_ignored_while_export_is_off(tmp_path: Path, script: Path) -> None:
    result = _ask(tmp_path, script, env={"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    assert result.exit_code == codes.OK, result.output  # type: ignore[attr-defined]


def test_telemetry_is_shut_down_when_the_command_fails(
    tmp_path: Path, script: Path, shutdowns: list[Telemetry]
) -> None:
    assert _ask(tmp_path, script).exit_code == codes.OK  # type: ignore[attr-defined]
    again = _ask(tmp_path, script, "--otel", env={"PROCTOR_OTEL_ENDPOINT": DEAD_ENDPOINT})
    assert again.exit_code == codes.USAGE  # type: ignore[attr-defined]
    assert "already exists" in again.stderr  # type: ignore[attr-defined]
    assert len(shutdowns) == 1


def test_telemetry_is_shut_down_on_ctrl_c(
    tmp_path: Path, script: Path, shutdowns: list[Telemetry], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        assert shutdowns == []  # still exporting while the run runs
        raise KeyboardInterrupt

    monkeypatch.setattr(AgentLoop, "start", interrupted)
    result = _ask(tmp_path, script, "--otel", env={"PROCTOR_OTEL_ENDPOINT": DEAD_ENDPOINT})
    assert result.exit_code == codes.INTERNAL  # type: ignore[attr-defined]
    assert "Aborted." in result.stderr  # type: ignore[attr-defined]
    assert len(shutdowns) == 1


def test_the_environment_variable_alone_turns_export_on(
    tmp_path: Path, script: Path, shutdowns: list[Telemetry]
) -> None:
    with OtlpReceiver(tmp_path) as receiver:
        result = _ask(tmp_path, script, env={"PROCTOR_OTEL_ENDPOINT": receiver.endpoint})
        spans = receiver.spans()
    assert result.exit_code == codes.OK, result.output  # type: ignore[attr-defined]
    assert [t.service_role for t in shutdowns] == ["ask"]
    runs = [s["attributes"]["proctor.run.id"] for s in spans if s["name"].startswith("invoke")]
    assert runs == ["r1"]


def test_otel_sdk_disabled_turns_export_off_whatever_the_flag(
    tmp_path: Path, script: Path, shutdowns: list[Telemetry]
) -> None:
    env = {"PROCTOR_OTEL_ENDPOINT": DEAD_ENDPOINT, "OTEL_SDK_DISABLED": "true"}
    result = _ask(tmp_path, script, "--otel", env=env)
    assert result.exit_code == codes.OK, result.output  # type: ignore[attr-defined]
    assert shutdowns == []


@pytest.mark.parametrize("command", ["ask", "run"])
def test_otel_without_the_extra_exits_64_with_the_install_line(
    tmp_path: Path, script: Path, command: str
) -> None:
    args = (
        ["ask", "x", "--script", str(script), "--state-dir", str(tmp_path / "state")]
        if command == "ask"
        else ["run", "--no-baseline", "--report-dir", str(tmp_path / "out")]
    )
    done = subprocess.run(
        [sys.executable, "-c", BLOCK_OPENTELEMETRY, *args, "--otel"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == codes.USAGE, done.stderr
    assert "pip install 'proctor[otel]'" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()  # nothing ran


def test_without_the_extra_the_same_ask_without_otel_runs(tmp_path: Path, script: Path) -> None:
    # The blocker must not break Proctor itself: only the export needs the SDK.
    done = subprocess.run(
        [sys.executable, "-c", BLOCK_OPENTELEMETRY, "ask", "x", "--script", str(script),
         "--state-dir", str(tmp_path / "state")],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    assert done.returncode == codes.OK, done.stderr
