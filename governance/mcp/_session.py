"""One connection to one MCP server, with its process, restarts and health: an `McpSession`.

A session knows nothing of Proctor's mapping: it opens the transport, lists the tools once,
runs calls and re-opens a dead connection (bounded). `McpToolSource` (the mapping, the pins,
the registered names) runs on a session of its own, or on one a suite shares between configs
that launch the same stateless server (`session_key`): the mapping is per config, the process
is per launch. Messages name the source that asked (`label`), never the session's first user.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
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
from governance.core._process_token import process_token
from governance.mcp._config import McpServerSpec
from governance.mcp._launch import (
    LoopThread,
    StartedProcess,
    StdioLaunch,
    StdioProcess,
    stdio_launch,
)
from governance.mcp._mapping import McpToolDefinition, encodable
from governance.mcp._stdio import exit_code_within, stdio_transport

SourceState = Literal["starting", "up", "failed", "down", "closed"]
DEFAULT_MAX_RESTARTS = 2
CLIENT_INFO = mcp_types.Implementation(name="proctor", version="0.1.0")
_BACKSTOP_SECONDS = 5.0  # beyond the SDK's own timeout, in case the loop itself is stuck
_SHUTDOWN_SECONDS = 15.0
_MAX_LIST_PAGES = 100
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
class CallFailure:
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


class McpSession(Closing):
    """One server's connection: started once, re-opened when it dies (at most `max_restarts`
    times), its first listing kept as the reference a re-opened listing is compared with."""

    def __init__(
        self,
        spec: McpServerSpec,
        *,
        environ: Mapping[str, str] | None = None,
        max_restarts: int = DEFAULT_MAX_RESTARTS,
        started: StartedProcess | None = None,
    ) -> None:
        """`spec`: only how to reach the server is read (transport, command, args, env, cwd,
        url, headers, connect_timeout), never its tool mapping. `started`: the server's process,
        started before the SDK was imported (`start_stdio_process`); the first connection adopts
        it when it was launched exactly as this session would launch it, else it is stopped and
        a process of its own started."""
        self.spec = spec
        self._environ = dict(os.environ if environ is None else environ)
        self._max_restarts = max_restarts
        self._lock = threading.RLock()
        self._state: SourceState = "starting"
        self._detail = ""
        self._restarts = 0
        self._conn: _Connection | None = None
        self._loop: LoopThread | None = None
        self._definitions: list[McpToolDefinition] = []  # the first listing, as listed
        self._changed: set[str] = set()  # MCP names whose definition changed after a re-open
        self._troubled = False  # a call timed out or lost the connection (see `reusable`)
        self._started = started

    # -- lifecycle ------------------------------------------------------------------------

    def begin(self) -> None:
        """Start connecting without waiting (several sessions can start side by side)."""
        with self._lock:
            if self._loop is not None or self._state != "starting":
                return
            adopted = self._adopt_started()
            if adopted is not None:
                self._loop, handle = adopted
                self._conn = self._launch(handle)
                return
            self._loop = LoopThread(f"proctor-{self.spec.source_name}")
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
                self._definitions = [_definition(tool) for tool in conn.listing]
            return self.status

    def close(self) -> None:
        """Shut the connection and the server process down; idempotent."""
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

    # -- what it knows ----------------------------------------------------------------------

    @property
    def status(self) -> SourceStatus:
        return SourceStatus(self._state, self._detail, self._restarts, self.pid)

    @property
    def pid(self) -> int | None:
        """The stdio child's pid while it runs."""
        conn = self._conn
        if conn is None or conn.handle is None or conn.handle.returncode is not None:
            return None
        return conn.handle.pid

    def definitions(self) -> list[McpToolDefinition]:
        """The tools as the server listed them at start-up (empty unless it came up)."""
        return list(self._definitions)

    def changed(self, name: str) -> bool:
        """Whether tool `name`'s definition changed (or vanished) on a re-open."""
        return name in self._changed

    def reusable(self) -> bool:
        """Whether the next scenario may have this session: up, never restarted, no changed
        tool, no call that timed out or lost the connection, and its connection still alive."""
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

    def note_trouble(self) -> None:
        """A call through this session timed out or lost the connection: not reusable."""
        self._troubled = True

    # -- calls ----------------------------------------------------------------------------

    def attempt(
        self, label: str, name: str, arguments: Mapping[str, Any], timeout: float
    ) -> mcp_types.CallToolResult | CallFailure:
        """Call tool `name` once; `label` (the asking source's name) is what messages say."""
        conn = self._live_connection(label)
        if conn is None or conn.client is None:
            return CallFailure(
                "server_unavailable",
                f"{label} is unavailable ({self.status.describe()})",
                sent=False,
            )
        if name in self._changed:
            return CallFailure(
                "tool_definition_changed",
                f"{name} changed when {label} reconnected",
                sent=False,
            )
        loop = self._loop
        if loop is None:  # closed by another thread just now
            return CallFailure("server_unavailable", f"{label} is closed", sent=False)
        future = loop.submit(_call_tool(conn.client, name, dict(arguments), timeout))
        try:
            return future.result(timeout=timeout + _BACKSTOP_SECONDS)
        except concurrent.futures.TimeoutError:
            # The SDK's own timeout did not fire: the loop itself is stuck; start afresh next time.
            future.cancel()
            conn.broken = True
            return CallFailure("timeout", f"no answer from {label} within {timeout:g}s")
        except MCPError as exc:
            if exc.code == mcp_types.REQUEST_TIMEOUT:
                return CallFailure("timeout", f"no answer from {label} within {timeout:g}s")
            if exc.code == mcp_types.CONNECTION_CLOSED:
                return self._broke(conn, label)
            return CallFailure("tool_error", f"{label} refused the call: {exc.message}")
        except (
            OSError,
            httpx2.TransportError,
            anyio.BrokenResourceError,
            anyio.ClosedResourceError,
        ) as exc:
            return self._broke(conn, label, _short(str(exc)) or type(exc).__name__)
        except concurrent.futures.CancelledError:
            return self._broke(conn, label)
        except Exception as exc:  # an invalid result, an unsupported request from the server
            return CallFailure("tool_error", f"{type(exc).__name__}: {_short(str(exc))}")

    def _broke(self, conn: _Connection, label: str, detail: str = "") -> CallFailure:
        """The connection broke mid-call: note it, and say why if the child's exit code shows."""
        conn.broken = True
        loop = self._loop
        if conn.handle is not None and loop is not None:
            # The pipe often closes a moment before the loop reaps the child: wait briefly.
            with contextlib.suppress(Exception):
                loop.submit(exit_code_within(conn.handle, _EXIT_CODE_WAIT)).result(
                    _EXIT_CODE_WAIT + _BACKSTOP_SECONDS
                )
        message = _lost_message(conn, label)
        return CallFailure(
            "connection_lost", f"{message} ({detail})" if detail else message, True
        )

    # -- connections ----------------------------------------------------------------------

    def _live_connection(self, label: str) -> _Connection | None:
        """The open connection, re-opened if it died (bounded); None when the session is down."""
        with self._lock:
            if self._state != "up":
                return None
            conn = self._conn
            if conn is not None and conn.alive():
                return conn
            why = self._detail or "the connection is closed"
            if conn is not None:
                why = _lost_message(conn, label)
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

    def _compare(self, listing: Sequence[mcp_types.Tool]) -> None:
        """After a re-open: a tool whose definition is no longer the first listing's (or that
        vanished) is refused from now on. The first listing of a name is the one that counts,
        as it is the one a source registers."""
        now = {d.name: d.digest for d in map(_definition, listing) if encodable(d)}
        first: dict[str, str] = {}
        for definition in self._definitions:
            if encodable(definition) and definition.name not in first:
                first[definition.name] = definition.digest
        for name, digest in first.items():
            if now.get(name) != digest:
                self._changed.add(name)


def _lost_message(conn: _Connection, label: str) -> str:
    handle = conn.handle
    if handle is not None and handle.returncode is not None:
        code = handle.returncode
        return f"the connection to {label} was lost (the server exited with code {code})"
    return f"the connection to {label} was lost"

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


