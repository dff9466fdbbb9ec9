"""`proctor console --otel` as a user starts it: an agent turn started from the page is exported
(its run, its model turns, its governed call), flushed when the console is stopped."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

from tests.otel_receiver import OtlpReceiver

pytestmark = pytest.mark.slow

TOKEN = "console-otel-token-0123456789"
WRITE = {"tool": "fs.write", "args": {"path": "reports/a.md", "content": "hello"}}
BOUND = 60.0  # seconds: a bound on waiting for the turn, never a measured duration


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("PROCTOR_", "OTEL_"))}


def _turn_until_finished(origin: str) -> str:
    """Sign in, start a turn from the Agent page, wait on /live until it completed."""
    with httpx2.Client(base_url=origin, follow_redirects=False, timeout=BOUND) as client:
        signed_in = client.post(
            "/login",
            data={"token": TOKEN, "operator": "ann", "next": "/"},
            headers={"Origin": origin},
        )
        assert signed_in.status_code == 303, signed_in.text
        found = re.search(r'<meta name="csrf-token" content="([^"]*)">', client.get("/login").text)
        assert found is not None
        started = client.post(
            "/agent",
            data={"csrf": found.group(1), "request": "write the report"},
            headers={"Origin": origin},
        )
        assert started.status_code == 303, started.text
        run_id = started.headers["location"].removeprefix("/agent/")
        with client.stream("GET", "/live?after=0") as live:
            for line in live.iter_lines():
                if not line.startswith("data: "):
                    continue
                data = json.loads(line.removeprefix("data: "))
                if data.get("run_id") == run_id and data.get("name") == "completed":
                    return run_id
    raise AssertionError("the live stream ended before the turn completed")


def test_a_console_turn_is_exported_and_flushed_when_the_console_stops(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"calls": [WRITE]}, {"answer": "Wrote it."}]), "utf-8")
    with OtlpReceiver(tmp_path) as receiver:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness", "console", "--otel", "--port", "0",
             "--token", TOKEN, "--provider", "script", "--script", str(script),
             "--state-dir", str(tmp_path / "state")],
            env={**_clean_env(), "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().split(": ", 1)[1].strip()
            run_id = _turn_until_finished(url.split("/login", 1)[0])
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=BOUND)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        spans = receiver.spans()
    assert proc.returncode == 0, err
    (run,) = [s for s in spans if s["name"] == "invoke_agent proctor"]
    assert run["attributes"]["proctor.run.id"] == run_id
    assert run["attributes"]["proctor.run.status"] == "completed"
    children = sorted(s["name"] for s in spans if s["parent_span_id"] == run["span_id"])
    assert children == ["chat scripted", "chat scripted", "execute_tool fs.write"]
    assert {s["resource"]["proctor.role"] for s in spans} == {"console"}
