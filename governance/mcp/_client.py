"""MCP servers as governed tool sources: a synchronous `ToolSource` over the async MCP SDK.

Each `McpToolSource` runs on an `McpSession` (governance.mcp._session): one asyncio event loop
in a daemon thread, where a single long-lived task owns the connection (transport +
`mcp.Client`), so the SDK's task groups are entered and left by the same task. The session is
the source's own, or one shared with sources of other configs that launch the same stateless
server (`session=`); the mapping, the pins and the registered names are always the source's.
`call` submits a coroutine to that loop and waits with the call timeout.
The firewall governs every call exactly as it governs a local tool: this module only discovers
tools, describes them, and runs the calls the firewall lets through.

Robustness, all of it reported as results, never raised:
  * a server that cannot start (bad command, crash on init, no answer in `connect_timeout`) is
    marked `failed` with the reason and offers no tools; the other servers are unaffected;
  * a call over `call_timeout` fails with reason `timeout`; the session stays usable;
  * a connection that died (stdio child gone, transport broken) is re-opened on the next call,
    at most `max_restarts` times per session, then its sources are `down` and calls fail with
    `server_unavailable`;
  * a transport failure during a call is `connection_lost` (its effect is unknown); only tools
    mapped `idempotent: true` are retried, once, on a fresh connection;
  * after a re-open the listing is compared with what was registered: a tool whose definition
    changed (or vanished) fails with `tool_definition_changed` until Proctor restarts.
The tool list is read once, at start-up (the registry is fixed then); a server's
`tools/list_changed` notifications are ignored, and new tools appear only after a restart.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import mcp_types

from governance.core._closing import Closing
from governance.core._contracts import ToolCall, ToolDescriptor, ToolResult
from governance.mcp._config import McpConfig, McpServerSpec
from governance.mcp._launch import StartedProcess
from governance.mcp._mapping import McpToolDefinition, McpToolInfo, describe_tools
from governance.mcp._pins import PinSet
from governance.mcp._session import (
    DEFAULT_MAX_RESTARTS,
    CallFailure,
    McpSession,
    SourceState,
    SourceStatus,
)

__all__ = [
    "DEFAULT_MAX_RESTARTS",
    "McpSession",
    "McpToolSource",
    "SourceState",
    "SourceStatus",
    "open_mcp_sources",
    "result_text",
]
_ERROR_CHARS = 2_000


def result_text(result: mcp_types.CallToolResult) -> str:
    """The text an agent reads: text blocks joined; structured content as JSON when no text."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            parts.append(f"[{block.type} content: {block.mime_type}, not shown]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource link: {block.uri}]")
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, mcp_types.TextResourceContents):
                parts.append(resource.text)
            else:
                parts.append(f"[embedded resource: {resource.uri}, not shown]")
    if not any(isinstance(b, mcp_types.TextContent) for b in result.content):
        if result.structured_content is not None:
            parts.insert(
                0, json.dumps(result.structured_content, sort_keys=True, ensure_ascii=False)
            )
    return "\n".join(parts)


class McpToolSource(Closing):
    """One MCP server's tools as a `ToolSource` named `mcp.<server>` (tools `mcp.<server>.<x>`)."""

    def __init__(
        self,
        spec: McpServerSpec,
        *,
        pins: PinSet | None = None,
        environ: Mapping[str, str] | None = None,
        max_restarts: int = DEFAULT_MAX_RESTARTS,
        started: StartedProcess | None = None,
        session: McpSession | None = None,
    ) -> None:
        """`started`: the server's process, started before the SDK was imported
        (`start_stdio_process`); the first connection adopts it when it was launched exactly
        as this source would launch it, else it is stopped and a process of its own started.

        `session`: a session shared with other sources (its owner closes it; closing this
        source only stops this source). Without it the source opens and owns its own, from
        `spec`, `environ`, `max_restarts` and `started`."""
        self.spec = spec
        self.name = spec.source_name
        self._pins = pins or PinSet()
        if session is None:
            session = McpSession(
                spec, environ=environ, max_restarts=max_restarts, started=started
            )
            self._owns_session = True
        else:
            if started is not None:
                started.discard()  # the shared session has its own process
            self._owns_session = False
        self._session = session
        self._closed = False
        self._discovered = False
        self._tools: list[McpToolInfo] = []
        self._registered: dict[str, McpToolInfo] = {}  # by registered name

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> SourceStatus:
        """Connect, discover the tools, apply mapping and pins. Never raises for a bad server."""
        self.begin()
        return self.wait_started()

    def begin(self) -> None:
        """Start connecting without waiting (several sources can start side by side)."""
        if not self._closed:
            self._session.begin()

    def wait_started(self) -> SourceStatus:
        if self._closed:
            return self.status
        status = self._session.wait_started()
        if status.state == "up" and not self._discovered:
            self._discovered = True
            definitions = self._session.definitions()
            self._tools = describe_tools(self.spec, definitions, self._pins)
            self._registered = {
                i.descriptor.name: i for i in self._tools if i.descriptor is not None
            }
        return self.status

    def close(self) -> None:
        """Stop this source (and its session, when it owns it); idempotent."""
        self._closed = True
        if self._owns_session:
            self._session.close()

    # -- what it offers -------------------------------------------------------------------

    @property
    def status(self) -> SourceStatus:
        status = self._session.status
        if self._closed and status.state != "closed":
            return SourceStatus("closed", status.detail, status.restarts, None)
        return status

    @property
    def pid(self) -> int | None:
        """The stdio child's pid while it runs (tests kill it; `mcp list` shows it)."""
        return None if self._closed else self._session.pid

    @property
    def session(self) -> McpSession:
        """The session this source runs on (shared or its own)."""
        return self._session

    def reusable(self) -> bool:
        """Whether a suite may hand this source to its next scenario (a `stateless` server):
        not closed, and its session up, never restarted, no changed tool, no call that timed
        out or lost the connection, its connection still alive. Anything else is closed and
        started afresh."""
        return not self._closed and self._session.reusable()

    def tools(self) -> list[McpToolInfo]:
        """Every tool the server listed at start-up, registered or skipped."""
        return list(self._tools)

    def definitions(self) -> list[McpToolDefinition]:
        """The registrable tools' definitions as listed (what `proctor mcp pin` records)."""
        return [info.definition for info in self._tools if info.descriptor is not None]

    def list_tools(self) -> list[ToolDescriptor]:
        return [info.descriptor for info in self._tools if info.descriptor is not None]

    # -- calls ----------------------------------------------------------------------------

    def call(self, call: ToolCall) -> ToolResult:
        info = self._registered.get(call.tool)
        if info is None:
            message = f"{call.tool} is not a tool of {self.name}"
            return self._failed(call, "unknown_tool", message, before_effect=True)
        name = info.definition.name
        if self._session.changed(name):
            return self._failed(
                call,
                "tool_definition_changed",
                f"{call.tool} changed (or vanished) when {self.name} was reconnected; "
                "nothing was executed - review it and restart Proctor",
                before_effect=True,
            )
        if self._closed:  # this source only: a session it shares may serve other sources
            message = f"{self.name} is unavailable ({self.status.describe()})"
            return self._failed(call, "server_unavailable", message, before_effect=True)
        idempotent = info.descriptor is not None and info.descriptor.idempotent
        outcome = self._attempt(name, call.arguments)
        if isinstance(outcome, CallFailure) and outcome.reason != "tool_error":
            self._session.note_trouble()
        if isinstance(outcome, CallFailure) and outcome.transport and idempotent:
            retry = self._attempt(name, call.arguments)  # on a fresh connection
            if not isinstance(retry, CallFailure):
                return self._result(call, retry)
            # The first attempt may have landed: its unknown effect is what gets reported.
            message = f"{outcome.message}; the one retry failed too: {retry.message}"
            return self._failed(call, "connection_lost", message)
        if isinstance(outcome, CallFailure):
            # Released only when the client's own gate refused before sending anything: a
            # reason the server (or the transport) gave never says nothing happened.
            before = not outcome.sent
            return self._failed(call, outcome.reason, outcome.message, before_effect=before)
        return self._result(call, outcome)

    def _attempt(
        self, name: str, arguments: Mapping[str, Any]
    ) -> mcp_types.CallToolResult | CallFailure:
        return self._session.attempt(self.name, name, arguments, self.spec.call_timeout)

    def _result(self, call: ToolCall, result: mcp_types.CallToolResult) -> ToolResult:
        text = result_text(result)
        if result.is_error:
            message = text[:_ERROR_CHARS] or "the tool reported an error without a message"
            return self._failed(call, "tool_error", message)
        limit = self.spec.max_result_chars
        return ToolResult(
            call_id=call.call_id,
            tool=call.tool,
            outcome="executed",
            output=text[:limit],
            truncated=len(text) > limit,
        )

    def _failed(
        self, call: ToolCall, reason: str, message: str, *, before_effect: bool = False
    ) -> ToolResult:
        return ToolResult(
            call_id=call.call_id,
            tool=call.tool,
            outcome="failed",
            error=message,
            reason=reason,
            before_effect=before_effect,
        )


def open_mcp_sources(
    config: McpConfig,
    pins: PinSet | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    max_restarts: int = DEFAULT_MAX_RESTARTS,
) -> list[McpToolSource]:
    """Start every configured server side by side; failed ones are returned with their status."""
    sources = [
        McpToolSource(spec, pins=pins, environ=environ, max_restarts=max_restarts)
        for spec in config.servers
    ]
    try:
        for source in sources:
            source.begin()
        for source in sources:
            source.wait_started()
    except BaseException:
        for source in sources:
            source.close()
        raise
    return sources
