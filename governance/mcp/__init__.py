"""MCP servers as tool sources: config, pins, description hygiene, and the SDK client over
stdio and Streamable HTTP (the SDK is imported only when a client is opened; a stdio server's
process can be started before that, `start_stdio_process`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from governance.core._lazy import lazy_attributes
from governance.mcp._config import McpConfig, McpConfigError, load_mcp_config, write_mcp_schema
from governance.mcp._mapping import HINTS, McpToolInfo
from governance.mcp._pins import (
    McpLockError,
    PinSet,
    load_pins,
    locked_sources,
    pins_for,
    write_pins,
)
from governance.mcp._text import neutralise_description

if TYPE_CHECKING:
    from governance.mcp._client import McpSession, McpToolSource, open_mcp_sources
    from governance.mcp._launch import (
        SessionKey,
        StartedProcess,
        session_key,
        start_stdio_process,
    )

# The SDK-bound modules (and anyio, for starting a process) load on first use, so reading a
# config or a lock imports neither.
_LAZY = {
    "McpSession": "governance.mcp._client",
    "McpToolSource": "governance.mcp._client",
    "open_mcp_sources": "governance.mcp._client",
    "SessionKey": "governance.mcp._launch",
    "StartedProcess": "governance.mcp._launch",
    "session_key": "governance.mcp._launch",
    "start_stdio_process": "governance.mcp._launch",
}


__getattr__ = lazy_attributes(globals(), _LAZY)  # later look-ups skip the hook


__all__ = [
    "write_mcp_schema",
    "HINTS",
    "McpConfig",
    "McpConfigError",
    "McpLockError",
    "McpSession",
    "McpToolInfo",
    "McpToolSource",
    "PinSet",
    "SessionKey",
    "StartedProcess",
    "load_mcp_config",
    "load_pins",
    "locked_sources",
    "neutralise_description",
    "open_mcp_sources",
    "pins_for",
    "session_key",
    "start_stdio_process",
    "write_pins",
]
