"""Export never changes a call: with nothing listening, a backend answering 500 or 503, or one
that never answers, the session (in a process of its own, with a real stderr) gives the same
results and the same audit chain as with export off, the shutdown keeps to its timeout, and
stderr gets one warning line, not one per failed batch."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.otel_receiver import OtlpReceiver

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
SHUTDOWN_TIMEOUT = 2.0
WARNING = "proctor: OpenTelemetry export failed"


def _session(state: Path, environ: dict[str, str]) -> tuple[dict[str, Any], list[str], float]:
    """The session's JSON report, its stderr lines and how long the process took."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PROCTOR_OTEL"))}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "tests.integration.telemetry.governed_session", str(state),
         str(SHUTDOWN_TIMEOUT)],
        capture_output=True, text=True, cwd=REPO, env={**env, **environ}, timeout=120,
    )  # fmt: skip
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    return json.loads(done.stdout), lines, took


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.mark.parametrize("backend", ["down", "500", "503", "hang"])
def test_a_failing_backend_changes_no_call_and_no_audit_record(
    tmp_path: Path, backend: str
) -> None:
    expected, quiet, _ = _session(tmp_path / "off", {})
    assert quiet == []
    receiver = OtlpReceiver(tmp_path, mode=backend) if backend != "down" else None
    try:
        if receiver is not None:
            receiver.start()
        endpoint = receiver.endpoint if receiver else f"http://127.0.0.1:{_free_port()}"
        environ = {
            "PROCTOR_OTEL_ENDPOINT": endpoint,
            # Seconds, as the Python SDK reads it; a hung backend holds each export this long,
            # longer than the shutdown may take.
            "OTEL_EXPORTER_OTLP_TIMEOUT": "10" if backend == "hang" else "0.5",
            "OTEL_BSP_SCHEDULE_DELAY": "10",  # batches go out during the session
            "OTEL_METRIC_EXPORT_INTERVAL": "50",
            "SESSION_WAIT_SECONDS": "1.5",  # several batches fail before the shutdown
        }
        got, stderr, took = _session(tmp_path / "on", environ)
    finally:
        if receiver is not None:
            receiver.stop()
    assert got["results"] == expected["results"]
    assert got["chain"] == expected["chain"]
    assert got["shutdown_seconds"] < SHUTDOWN_TIMEOUT + 0.5
    assert took < 1.5 + SHUTDOWN_TIMEOUT + 8  # and the process exits: no export holds it
    assert len(stderr) == 1 and stderr[0].startswith(WARNING), stderr
    if receiver is not None:
        assert receiver.spans() == []  # nothing was accepted
    if backend in ("500", "503"):
        assert receiver is not None and len(receiver.refused()) >= 3  # one line, many batches


def test_events_after_shutdown_are_ignored_and_start_nothing(tmp_path: Path) -> None:
    from governance.telemetry import Telemetry, telemetry_config
    from tests.integration.telemetry.governed_session import chain, drive, gateway

    config = telemetry_config(flag=True, environ={"PROCTOR_OTEL_ENDPOINT": "http://127.0.0.1:9"})
    assert config is not None
    telemetry = Telemetry.start(config, service_role="serve")
    telemetry.shutdown()
    telemetry.shutdown()  # idempotent
    with gateway(tmp_path / "on", telemetry) as opened:
        outcomes = {k: r.outcome for k, r in drive(opened).items()}
        on = chain(opened)
    with gateway(tmp_path / "off") as opened:
        assert {k: r.outcome for k, r in drive(opened).items()} == outcomes
        assert chain(opened) == on
    assert telemetry._thread is None
