"""The demo MCP server's tools and command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

DESCRIPTIONS: Mapping[str, str] = {
    "echo": "Echo the text back, repeated repeatCount times.",
    "slow": "Sleep for the given number of seconds, then answer.",
    "crash": "Exit the server process immediately (a crash mid-call).",
    "flaky": "Crash the first time it sees a marker path, answer every later time.",
    "big": "Return a string of the requested number of characters.",
    "fail": "Always fail with the given message (a tool error, not a crash).",
    "env": "Return the server process's environment variables.",
    "wipe": "Pretend to delete the target everywhere (annotated destructive, open world).",
    "auth": "Return the Authorization header of the HTTP request (none over stdio).",
}
_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)


def _descriptions(path: Path | None) -> dict[str, str]:
    found = dict(DESCRIPTIONS)
    if path is not None:
        overrides = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(overrides, dict):
            raise SystemExit(f"{path}: the description file must be a JSON object")
        found.update({str(k): str(v) for k, v in overrides.items()})
    return found


def _echo_text(text: str) -> str:
    return text


class _LoggingServer(MCPServer):
    """Appends one JSON line per tool call it receives (before running it) to `call_log`:
    what tests read to prove a call never reached the server."""

    def __init__(self, call_log: Path) -> None:
        super().__init__("proctor-mcp-demo", version="1.0", subscriptions=False)
        self._call_log = call_log

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        line = json.dumps({"tool": name, "arguments": arguments}, sort_keys=True)
        with self._call_log.open("a", encoding="utf-8") as log:
            log.write(line + "\n")
        return await super().call_tool(name, arguments, context)


def build_server(
    descriptions: Mapping[str, str] | None = None,
    extra_tools: Sequence[str] = (),
    call_log: Path | None = None,
) -> MCPServer:
    """The demo server; `descriptions` replaces the shipped tool descriptions.

    `extra_tools` adds echo tools under arbitrary names (e.g. `bad.name`), for clients that
    must cope with names they cannot register. `call_log` records every call received.
    """
    text = {**DESCRIPTIONS, **(descriptions or {})}
    server = (
        _LoggingServer(call_log)
        if call_log is not None
        else MCPServer("proctor-mcp-demo", version="1.0", subscriptions=False)
    )

    @server.tool(name="echo", description=text["echo"], annotations=_READ_ONLY)
    def echo(text: str, repeatCount: int = 1) -> str:  # noqa: N803 - a camelCase name on purpose
        return text * repeatCount

    @server.tool(name="slow", description=text["slow"], annotations=_READ_ONLY)
    async def slow(seconds: float) -> str:
        await anyio.sleep(seconds)
        return f"slept {seconds}s"

    @server.tool(name="crash", description=text["crash"])
    def crash() -> str:
        sys.stderr.flush()
        os._exit(3)

    @server.tool(name="flaky", description=text["flaky"])
    def flaky(marker: str) -> str:
        path = Path(marker)
        if not path.exists():
            path.write_text("crashed once\n", encoding="utf-8")
            os._exit(4)
        return "survived"

    @server.tool(name="big", description=text["big"], annotations=_READ_ONLY)
    def big(chars: Annotated[int, Field(ge=0, le=10_000_000)]) -> str:
        return "x" * chars

    @server.tool(name="fail", description=text["fail"])
    def fail(message: str) -> str:
        raise ToolError(message)

    @server.tool(name="env", description=text["env"], annotations=_READ_ONLY)
    def env() -> dict[str, str]:
        return dict(os.environ)

    @server.tool(
        name="wipe",
        description=text["wipe"],
        annotations=ToolAnnotations(destructive_hint=True, open_world_hint=True),
    )
    def wipe(target: str) -> str:
        return f"pretended to wipe {target}"

    @server.tool(name="auth", description=text["auth"], annotations=_READ_ONLY)
    def auth(ctx: Context) -> str:
        headers = ctx.headers or {}
        return headers.get("authorization", "(no Authorization header)")

    for extra in extra_tools:
        server.add_tool(_echo_text, name=extra, description=f"Echo, named {extra!r}.")
    return server


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m stubs.mcp_demo", description=__doc__)
    parser.add_argument("--description-file", type=Path, help="JSON {tool: description}")
    parser.add_argument(
        "--crash-on-start", action="store_true", help="exit with status 1 before serving"
    )
    parser.add_argument(
        "--extra-tool", action="append", default=[], help="add an echo tool with this name"
    )
    parser.add_argument(
        "--call-log", type=Path, help="append one JSON line per tool call received to this file"
    )
    args = parser.parse_args(argv)
    if args.crash_on_start:
        print("mcp_demo: crashing on start, as asked", file=sys.stderr)
        raise SystemExit(1)
    server = build_server(_descriptions(args.description_file), args.extra_tool, args.call_log)
    server.run("stdio")
