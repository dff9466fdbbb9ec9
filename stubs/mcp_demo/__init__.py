"""A tiny MCP server for Proctor's MCP-client tests: real stdio, faults on demand.

Run it with `python -m stubs.mcp_demo [--description-file FILE] [--crash-on-start]`.
Its tools: `echo`, `slow` (sleeps), `crash` (exits the process mid-call), `flaky` (crashes
the first time for a marker file, then answers), `big` (huge output), `fail` (a tool error),
`env` (the server's own environment), `wipe` (annotated destructive and open-world), `auth`
(the HTTP Authorization header it received). `serving_http()` runs it over Streamable HTTP.
A description file (JSON `{"tool": "description"}`) replaces descriptions at start-up, so a
"tool definition changed" test changes a real server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stubs.mcp_demo._server import DESCRIPTIONS, build_server, main

if TYPE_CHECKING:
    from stubs.mcp_demo._http import serving_http

__all__ = ["DESCRIPTIONS", "build_server", "main", "serving_http"]


def __getattr__(name: str) -> Any:
    # The HTTP server (uvicorn, starlette, Proctor's own server helpers) loads on first use:
    # `python -m stubs.mcp_demo` serves stdio and would pay ~0.1 s of imports for nothing.
    if name == "serving_http":
        from stubs.mcp_demo._http import serving_http

        return serving_http
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
