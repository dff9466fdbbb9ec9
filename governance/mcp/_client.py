"""MCP servers as governed tool sources: a synchronous `ToolSource` over the async MCP SDK.

Each `McpToolSource` runs one asyncio event loop in a daemon thread; a single long-lived task
on it owns the connection (transport + `mcp.Client`), so the SDK's task groups are entered and
left by the same task. `call` submits a coroutine to that loop and waits with the call timeout.
The firewall governs every call exactly as it governs a local tool: this module only discovers
tools, describes them, and runs the calls the firewall lets through.

Robustness, all of it reported as results, never raised:
  * a server that cannot start (bad command, crash on init, no answer in `connect_timeout`) is
    marked `failed` with the reason and offers no tools; the other servers are unaffected;
  * a call over `call_timeout` fails with reason `timeout`; the session stays usable;
  * a connection that died (stdio child gone, transport broken) is re-opened on the next call,
    at most `max_restarts` times per source, then the source is `down` and calls fail with
    `server_unavailable`;
  * a transport failure during a call is `connection_lost` (its effect is unknown); only tools
    mapped `idempotent: true` are retried, once, on a fresh connection;
  * after a re-open the listing is compared with what was registered: a tool whose definition
    changed (or vanished) fails with `tool_definition_changed` until Proctor restarts.
The tool list is read once, at start-up (the registry is fixed then); a server's
`tools/list_changed` notifications are ignored, and new tools appear only after a restart.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import json
import math
import os
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import httpx2
import mcp_types
from mcp import Client
from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from governance.core._closing import Closing
from governance.core._contracts import ToolCall, ToolDescriptor, ToolResult
from governance.core._process_token import process_token
from governance.mcp._config import McpConfig, McpServerSpec
from governance.mcp._launch import (
    LoopThread,
    StartedProcess,
    StdioLaunch,
    StdioProcess,
    stdio_launch,
)
from governance.mcp._mapping import McpToolDefinition, McpToolInfo, describe_tools, encodable
from governance.mcp._pins import PinSet
from governance.mcp._stdio import exit_code_within, stdio_transport

SourceState = Literal["starting", "up", "failed", "down", "closed"]
DEFAULT_MAX_RESTARTS = 2
CLIENT_INFO = mcp_types.Implementation(name="proctor", version="0.1.0")
_BACKSTOP_SECONDS = 5.0  # beyond the SDK's own timeout, in case the loop itself is stuck
_SHUTDOWN_SECONDS = 15.0
_MAX_LIST_PAGES = 100
_ERROR_CHARS = 2_000
_EXIT_CODE_WAIT = 0.5


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """Where one server stands: `up`, or why it `failed` to start or went `down`."""

    state: SourceState
    detail: str = ""
    restarts: int = 0
    pid: int | None = None

    def describe(self) -> str:
        return f"{self.state}: {self.detail}" if self.detail else self.state


@dataclass(frozen=True, slots=True)
class _Failure:
    reason: str
    message: str
    transport: bool = False  # the connection broke: the effect is unknown, a retry may help
    sent: bool = True  # False only for a gate that refused before anything went to the server


class _Connection:
    """One open (or failed) connection to a server, owned by one task on the source's loop."""

    def __init__(self, stdio: bool) -> None:
        self.handle = StdioProcess() if stdio else None
        self.client: Client | None = None
        self.listing: list[mcp_types.Tool] = []
        self.error: str | None = None
        self.broken = False
        self.ready = threading.Event()
        self.stop = asyncio.Event()  # binds to the loop on first use
        self.done: concurrent.futures.Future[None] | None = None

    def alive(self) -> bool:
        if self.client is None or self.error is not None or self.broken:
            return False
        if self.done is not None and self.done.done():
            return False
        handle = self.handle
        if handle is None:
            return True
        if handle.lost or handle.returncode is not None:
            return False
        pid = handle.pid
        return pid is not None and process_token(pid) is not None


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


def _definition(tool: mcp_types.Tool) -> McpToolDefinition:
    hints: dict[str, bool | None] = {}
    if tool.annotations is not None:
        hints = {
            "read_only_hint": tool.annotations.read_only_hint,
            "destructive_hint": tool.annotations.destructive_hint,
            "idempotent_hint": tool.annotations.idempotent_hint,
            "open_world_hint": tool.annotations.open_world_hint,
        }
    return McpToolDefinition(
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema),
        output_schema=None if tool.output_schema is None else dict(tool.output_schema),
        title=tool.title,
        annotations=hints,
    )


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
    ) -> None:
        """`started`: the server's process, started before the SDK was imported
        (`start_stdio_process`); the first connection adopts it when it was launched exactly
        as this source would launch it, else it is stopped and a process of its own started."""
        self.spec = spec
        self.name = spec.source_name
        self._pins = pins or PinSet()
        self._environ = dict(os.environ if environ is None else environ)
        self._max_restarts = max_restarts
        self._lock = threading.RLock()
        self._state: SourceState = "starting"
        self._detail = ""
        self._restarts = 0
        self._conn: _Connection | None = None
        self._loop: LoopThread | None = None
        self._tools: list[McpToolInfo] = []
        self._registered: dict[str, McpToolInfo] = {}  # by registered name
        self._changed: set[str] = set()  # MCP names whose definition changed after a re-open
        self._troubled = False  # a call timed out or lost the connection (see `reusable`)
        self._started = started

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> SourceStatus:
        """Connect, discover the tools, apply mapping and pins. Never raises for a bad server."""
        self.begin()
        return self.wait_started()

    def begin(self) -> None:
        """Start connecting without waiting (several sources can start side by side)."""
        with self._lock:
            if self._loop is not None:
                return
            adopted = self._adopt_started()
            if adopted is not None:
                self._loop, handle = adopted
                self._conn = self._launch(handle)
                return
            self._loop = LoopThread(f"proctor-{self.name}")
            self._conn = self._launch()

    def _adopt_started(self) -> tuple[LoopThread, StdioProcess] | None:
        started, self._started = self._started, None
        if started is None:
            return None
        launch = self._stdio_launch() if self.spec.transport == "stdio" else None
        if not isinstance(launch, StdioLaunch):
            started.discard()
            return None
        return started.take(launch)

    def wait_started(self) -> SourceStatus:
        with self._lock:
            conn = self._conn
            if self._state != "starting" or conn is None:
                return self.status
            self._await_ready(conn)
            if conn.error is not None or conn.client is None:
                self._fail("failed", conn.error or "the connection closed during start-up")
                self._teardown(conn)
                self._conn = None
                self._close_loop()
            else:
                self._state = "up"
                self._discover(conn.listing)
            return self.status

    def close(self) -> None:
        """Shut the session and the server process down; idempotent."""
        with self._lock:
            if self._state == "closed":
                return
            self._state = "closed"
            if self._started is not None:  # closed before it ever began
                self._started.discard()
                self._started = None
            if self._conn is not None:
                self._teardown(self._conn)
                self._conn = None
            self._close_loop()

    # -- what it offers -------------------------------------------------------------------

    @property
    def status(self) -> SourceStatus:
        return SourceStatus(self._state, self._detail, self._restarts, self.pid)

    @property
    def pid(self) -> int | None:
        """The stdio child's pid while it runs (tests kill it; `mcp list` shows it)."""
        conn = self._conn
        if conn is None or conn.handle is None or conn.handle.returncode is not None:
            return None
        return conn.handle.pid

    def reusable(self) -> bool:
        """Whether a suite may hand this source to its next scenario (a `stateless` server):
        up, never restarted, no changed tool, no call that timed out or lost the connection,
        and its connection still alive. Anything else is closed and started afresh."""
        with self._lock:
            conn = self._conn
            return (
                self._state == "up"
                and self._restarts == 0
                and not self._changed
                and not self._troubled
                and conn is not None
                and conn.alive()
            )

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
        if name in self._changed:
            return self._failed(
                call,
                "tool_definition_changed",
                f"{call.tool} changed (or vanished) when {self.name} was reconnected; "
                "nothing was executed - review it and restart Proctor",
                before_effect=True,
            )
        idempotent = info.descriptor is not None and info.descriptor.idempotent
        outcome = self._attempt(name, call.arguments)
        if isinstance(outcome, _Failure) and outcome.reason != "tool_error":
            self._troubled = True
        if isinstance(outcome, _Failure) and outcome.transport and idempotent:
            retry = self._attempt(name, call.arguments)  # on a fresh connection
            if not isinstance(retry, _Failure):
                return self._result(call, retry)
            # The first attempt may have landed: its unknown effect is what gets reported.
            message = f"{outcome.message}; the one retry failed too: {retry.message}"
            return self._failed(call, "connection_lost", message)
        if isinstance(outcome, _Failure):
            # Released only when the client's own gate refused before sending anything: a
            # reason the server (or the transport) gave never says nothing happened.
            before = not outcome.sent
            return self._failed(call, outcome.reason, outcome.message, before_effect=before)
        return self._result(call, outcome)

    def _attempt(
        self, name: str, arguments: Mapping[str, Any]
    ) -> mcp_types.CallToolResult | _Failure:
        conn = self._live_connection()
        if conn is None or conn.client is None:
            return _Failure(
                "server_unavailable",
                f"{self.name} is unavailable ({self.status.describe()})",
                sent=False,
            )
        if name in self._changed:
            return _Failure(
                "tool_definition_changed",
                f"{name} changed when {self.name} reconnected",
                sent=False,
            )
        loop = self._loop
        if loop is None:  # closed by another thread just now
            return _Failure("server_unavailable", f"{self.name} is closed", sent=False)
        timeout = self.spec.call_timeout
        future = loop.submit(_call_tool(conn.client, name, dict(arguments), timeout))
        try:
            return future.result(timeout=timeout + _BACKSTOP_SECONDS)
        except concurrent.futures.TimeoutError:
            # The SDK's own timeout did not fire: the loop itself is stuck; start afresh next time.
            future.cancel()
            conn.broken = True
            return _Failure("timeout", f"no answer from {self.name} within {timeout:g}s")
        except MCPError as exc:
            if exc.code == mcp_types.REQUEST_TIMEOUT:
                return _Failure("timeout", f"no answer from {self.name} within {timeout:g}s")
            if exc.code == mcp_types.CONNECTION_CLOSED:
                return self._broke(conn)
            return _Failure("tool_error", f"{self.name} refused the call: {exc.message}")
        except (
            OSError,
            httpx2.TransportError,
            anyio.BrokenResourceError,
            anyio.ClosedResourceError,
        ) as exc:
            return self._broke(conn, _short(str(exc)) or type(exc).__name__)
        except concurrent.futures.CancelledError:
            return self._broke(conn)
        except Exception as exc:  # an invalid result, an unsupported request from the server
            return _Failure("tool_error", f"{type(exc).__name__}: {_short(str(exc))}")

    def _broke(self, conn: _Connection, detail: str = "") -> _Failure:
        """The connection broke mid-call: note it, and say why if the child's exit code shows."""
        conn.broken = True
        loop = self._loop
        if conn.handle is not None and loop is not None:
            # The pipe often closes a moment before the loop reaps the child: wait briefly.
            with contextlib.suppress(Exception):
                loop.submit(exit_code_within(conn.handle, _EXIT_CODE_WAIT)).result(
                    _EXIT_CODE_WAIT + _BACKSTOP_SECONDS
                )
        message = self._lost_message(conn)
        return _Failure("connection_lost", f"{message} ({detail})" if detail else message, True)

    def _lost_message(self, conn: _Connection) -> str:
        handle = conn.handle
        if handle is not None and handle.returncode is not None:
            code = handle.returncode
            return f"the connection to {self.name} was lost (the server exited with code {code})"
        return f"the connection to {self.name} was lost"

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

    # -- connections ----------------------------------------------------------------------

    def _live_connection(self) -> _Connection | None:
        """The open connection, re-opened if it died (bounded); None when the source is down."""
        with self._lock:
            if self._state != "up":
                return None
            conn = self._conn
            if conn is not None and conn.alive():
                return conn
            why = self._detail or "the connection is closed"
            if conn is not None:
                why = self._lost_message(conn)
            if conn is not None:
                self._teardown(conn)
                self._conn = None
            if self._restarts >= self._max_restarts:
                self._fail("down", f"{why}; gave up after {self._restarts} restarts")
                self._close_loop()
                return None
            self._restarts += 1
            fresh = self._launch()
            self._await_ready(fresh)
            if fresh.error is not None or fresh.client is None:
                self._detail = f"restart {self._restarts} failed: {fresh.error}"
                self._teardown(fresh)
                return None
            self._detail = ""
            self._conn = fresh
            self._compare(fresh.listing)
            return fresh

    def _launch(self, started: StdioProcess | None = None) -> _Connection:
        assert self._loop is not None
        spec = self.spec
        conn = _Connection(stdio=spec.transport == "stdio")
        if started is not None:
            conn.handle = started
        opener: Callable[[], contextlib.AbstractAsyncContextManager[TransportStreams]]
        if spec.transport == "stdio":
            launch = self._stdio_launch()
            if isinstance(launch, str):
                conn.error = launch
                conn.ready.set()
                return conn
            assert conn.handle is not None
            opener = functools.partial(stdio_transport, launch, conn.handle)
        else:
            headers = self._http_headers()
            if isinstance(headers, str):
                conn.error = headers
                conn.ready.set()
                return conn
            opener = functools.partial(_http_transport, spec, headers)
        conn.done = self._loop.submit(_run_connection(conn, opener, spec))
        return conn

    def _stdio_launch(self) -> StdioLaunch | str:
        return stdio_launch(self.spec, self._environ)

    def _http_headers(self) -> dict[str, str] | str:
        headers: dict[str, str] = {}
        for header, source in self.spec.headers.items():
            value = self._environ.get(source.env)
            if value is None:
                return f"header {header} needs ${source.env}, which is not set"
            headers[header] = source.prefix + value
        return headers

    def _await_ready(self, conn: _Connection) -> None:
        if not conn.ready.wait(self.spec.connect_timeout + _BACKSTOP_SECONDS):
            conn.error = f"no answer within {self.spec.connect_timeout:g}s"

    def _teardown(self, conn: _Connection) -> None:
        loop = self._loop
        if loop is None or conn.done is None:
            return
        loop.call_soon(conn.stop.set)
        with contextlib.suppress(Exception):
            conn.done.result(timeout=_SHUTDOWN_SECONDS)

    def _close_loop(self) -> None:
        if self._loop is not None:
            self._loop.close()
            self._loop = None

    def _fail(self, state: SourceState, detail: str) -> None:
        self._state = state
        self._detail = detail

    # -- discovery ------------------------------------------------------------------------

    def _discover(self, listing: Sequence[mcp_types.Tool]) -> None:
        self._tools = describe_tools(self.spec, [_definition(t) for t in listing], self._pins)
        self._registered = {i.descriptor.name: i for i in self._tools if i.descriptor is not None}

    def _compare(self, listing: Sequence[mcp_types.Tool]) -> None:
        """After a re-open: refuse tools whose definition is no longer what was registered."""
        now = {d.name: d.digest for d in map(_definition, listing) if encodable(d)}
        for info in self._registered.values():
            name = info.definition.name
            if now.get(name) != info.definition.digest:
                self._changed.add(name)


async def _call_tool(
    client: Client, name: str, arguments: dict[str, Any], timeout: float
) -> mcp_types.CallToolResult:
    return await client.call_tool(name, arguments, read_timeout_seconds=timeout)


async def _list_all(client: Client) -> list[mcp_types.Tool]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


@asynccontextmanager
async def _http_transport(
    spec: McpServerSpec, headers: dict[str, str]
) -> AsyncIterator[TransportStreams]:
    timeout = httpx2.Timeout(spec.connect_timeout, read=max(300.0, spec.call_timeout))
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        async with streamable_http_client(spec.url, http_client=http) as streams:
            yield streams


def _describe_failure(exc: BaseException, conn: _Connection, spec: McpServerSpec) -> str:
    leaves = [leaf for leaf in _leaves(exc) if not isinstance(leaf, asyncio.CancelledError)]
    first = leaves[0] if leaves else exc
    handle = conn.handle
    if handle is not None and handle.process is None and isinstance(first, OSError):
        return f"cannot start {spec.command!r}: {first.strerror or first}"
    if handle is not None and handle.returncode is not None:
        tail = (
            _short(handle.stderr_tail().strip().splitlines()[-1])
            if handle.stderr_tail().strip()
            else ""
        )
        said = f": {tail}" if tail else ""
        return f"the server exited with code {handle.returncode} during start-up{said}"
    if isinstance(first, MCPError):
        if first.code == mcp_types.CONNECTION_CLOSED:
            return "the server closed the connection during start-up"
        return f"the MCP handshake failed: {_short(first.message)}"
    if isinstance(first, httpx2.HTTPError):
        return f"cannot reach {spec.url}: {_short(str(first)) or type(first).__name__}"
    return f"start-up failed: {type(first).__name__}: {_short(str(first))}"


async def _run_connection(
    conn: _Connection,
    opener: Callable[[], contextlib.AbstractAsyncContextManager[TransportStreams]],
    spec: McpServerSpec,
) -> None:
    """Own one connection for its whole life: open, list tools, then wait to be told to stop."""
    scope = anyio.CancelScope(deadline=anyio.current_time() + spec.connect_timeout)
    try:
        with scope:
            async with AsyncExitStack() as stack:
                client = Client(opener(), cache=None, client_info=CLIENT_INFO)
                await stack.enter_async_context(client)
                listing = await _list_all(client)
                scope.deadline = math.inf
                conn.listing = listing
                conn.client = client
                conn.ready.set()
                await conn.stop.wait()
    except Exception as exc:
        conn.broken = True
        if not conn.ready.is_set():
            conn.error = _describe_failure(exc, conn, spec)
    finally:
        if scope.cancel_called and not conn.ready.is_set():
            conn.error = f"no answer within {spec.connect_timeout:g}s"
        if conn.client is None and conn.error is None:
            conn.error = "the connection closed during start-up"
        conn.ready.set()


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
