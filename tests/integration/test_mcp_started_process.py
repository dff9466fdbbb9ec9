"""A stdio server's process started before the MCP SDK is imported (`start_stdio_process`):
the source adopts it only when it was launched exactly as the source would launch it, and a
process nobody adopts is stopped. Every process here is real and every one is cleaned up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from governance import Principal, ToolCall
from governance.core._process_token import process_token
from governance.mcp import McpToolSource, start_stdio_process
from governance.mcp._config import McpServerSpec, ToolMapping

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
READ = ToolMapping("read", "low", reversible=True, external_side_effect=False)


def _spec(*, command: str = "python", env: tuple[str, ...] = ()) -> McpServerSpec:
    return McpServerSpec(
        name="demo",
        transport="stdio",
        command=command,
        args=("-m", "stubs.mcp_demo"),
        cwd=str(REPO),
        env=env,
        tools={"env": READ, "echo": READ},
    )


def _gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if process_token(pid) is None:
            return True
        time.sleep(0.02)
    return False


def _call(source: McpToolSource, tool: str, **arguments: object) -> str:
    call = ToolCall("c1", f"mcp.demo.{tool}", arguments, "run", Principal("a", "b", "c"))
    result = source.call(call)
    assert result.outcome == "executed", result.error
    assert result.output is not None
    return result.output


def test_a_source_adopts_the_process_started_for_it_and_starts_no_other() -> None:
    started = start_stdio_process(_spec())
    assert started is not None and started.pid is not None
    source = McpToolSource(_spec(), started=started)
    try:
        assert source.start().state == "up"
        assert source.pid == started.pid
        assert _call(source, "echo", text="hello") == "hello"
    finally:
        source.close()
    assert _gone(started.pid)


def test_a_process_started_with_another_environment_is_stopped_and_never_used() -> None:
    spec = _spec(env=("PROCTOR_TEST_WHICH",))
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")}
    started = start_stdio_process(spec, {**base, "PROCTOR_TEST_WHICH": "started early"})
    assert started is not None and started.pid is not None
    source = McpToolSource(
        spec, environ={**base, "PROCTOR_TEST_WHICH": "the source's own"}, started=started
    )
    try:
        assert source.start().state == "up"
        assert source.pid != started.pid
        assert _gone(started.pid)
        seen = json.loads(_call(source, "env"))
        assert seen["PROCTOR_TEST_WHICH"] == "the source's own"
    finally:
        source.close()


def test_a_started_process_is_stopped_when_its_source_closes_without_starting() -> None:
    started = start_stdio_process(_spec())
    assert started is not None and started.pid is not None
    McpToolSource(_spec(), started=started).close()
    assert _gone(started.pid)


def test_a_discarded_process_is_stopped_and_can_no_longer_be_adopted() -> None:
    started = start_stdio_process(_spec())
    assert started is not None and started.pid is not None
    started.discard()
    assert _gone(started.pid)
    assert started.take(started.launch) is None


def test_a_command_that_cannot_start_leaves_the_failure_to_its_source() -> None:
    spec = _spec(command="/nonexistent/proctor-no-such-server")
    assert start_stdio_process(spec) is None
    source = McpToolSource(spec)
    try:
        status = source.start()
    finally:
        source.close()
    assert status.state == "failed"
    assert "cannot start" in status.detail


def test_starting_a_process_does_not_import_the_mcp_sdk() -> None:
    probe = (
        "import sys; from governance.mcp import load_mcp_config, start_stdio_process\n"
        "config = load_mcp_config(__import__('pathlib').Path(sys.argv[1]))\n"
        "started = start_stdio_process(config.servers[0])\n"
        "print(started is not None, 'mcp' in sys.modules)\n"
        "started.discard()\n"
    )
    config = REPO / "scenarios" / "mcp" / "servers" / "demo.yaml"
    done = subprocess.run(
        [sys.executable, "-c", probe, str(config)],
        capture_output=True, text=True, check=True, cwd=REPO,
    )  # fmt: skip
    assert done.stdout.split() == ["True", "False"]
