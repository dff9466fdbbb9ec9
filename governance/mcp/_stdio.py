"""The stdio transport for the MCP servers Proctor launches: an exact environment, a known pid.

The SDK's `stdio_client` always merges its own inherited variables (LOGNAME, SHELL, USER, ...)
into the child's environment and keeps the process to itself. Proctor's child gets exactly the
environment it is given and exposes its pid (status output, tests that kill it). The framing is
the SDK's: newline-delimited JSON-RPC on stdin/stdout. stderr is drained into a bounded tail that
start-up errors quote. POSIX only: the child runs in its own session so the whole tree can go.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import anyio
import anyio.abc
import mcp_types
from anyio.streams.text import TextReceiveStream
from mcp.client._transport import TransportStreams
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from governance.mcp._launch import StdioLaunch, StdioProcess, open_stdio_process

MAX_MESSAGE_CHARS = 64 * 1024 * 1024  # one JSON-RPC line; a server sending more is cut off
EXIT_GRACE_SECONDS = 1.0  # after stdin closes, before SIGTERM to the process group
KILL_GRACE_SECONDS = 1.0  # after SIGTERM, before SIGKILL
_WRITER_FLUSH_SECONDS = 0.5
_POLL_SECONDS = 0.01


def _parse_line(line: str) -> SessionMessage | Exception:
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as exc:
        return exc  # the session surfaces it; one bad line does not end the connection
    return SessionMessage(message)


@asynccontextmanager
async def stdio_transport(
    launch: StdioLaunch, handle: StdioProcess
) -> AsyncIterator[TransportStreams]:
    """Spawn the server (unless `handle` holds it already) and yield the (read, write) streams
    a `ClientSession` runs on.

    Raises OSError when the command cannot be started. On exit the child is stopped the MCP
    way (stdin closed, a grace period, then SIGTERM and SIGKILL to its process group), every
    wait bounded, shielded from cancellation so no process outlives the connection.
    """
    # A process started ahead of the SDK import (`start_stdio_process`) is adopted as it is.
    process = handle.process
    if process is None:
        process = await open_stdio_process(launch, handle)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()
    shutting_down = False

    async def stdout_reader() -> None:
        assert process.stdout is not None
        try:
            async with read_writer:
                buffer = ""
                async for chunk in TextReceiveStream(process.stdout, encoding="utf-8"):
                    lines = (buffer + chunk).split("\n")
                    buffer = lines.pop()
                    if len(buffer) > MAX_MESSAGE_CHARS:
                        return  # a runaway line: treat the connection as broken
                    for line in lines:
                        if line.strip():
                            await read_writer.send(_parse_line(line))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError, ValueError):
            pass
        finally:
            if not shutting_down:
                handle.lost = True

    async def stderr_reader() -> None:
        assert process.stderr is not None
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async for chunk in TextReceiveStream(
                process.stderr, encoding="utf-8", errors="replace"
            ):
                handle._note_stderr(chunk)

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((data + "\n").encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            handle.lost = handle.lost or not shutting_down
            await read_writer.aclose()  # the session sees the end instead of waiting forever
        finally:
            writer_done.set()

    async with anyio.create_task_group() as group:
        group.start_soon(stdout_reader)
        group.start_soon(stderr_reader)
        group.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):
                read_stream.close()
                write_stream.close()
                with anyio.move_on_after(_WRITER_FLUSH_SECONDS):
                    await writer_done.wait()
                await stop_process(process)
                for stream in (read_stream, write_stream, read_writer, write_reader):
                    await stream.aclose()
            group.cancel_scope.cancel()


async def _exited_within(process: anyio.abc.Process, seconds: float) -> bool:
    # Polls returncode: asyncio's wait() also waits for pipe EOF, which a grandchild can hold.
    deadline = anyio.current_time() + seconds
    while process.returncode is None:
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(_POLL_SECONDS)
    return True


async def exit_code_within(handle: StdioProcess, seconds: float) -> int | None:
    """The child's exit code once the event loop has reaped it (bounded), or None."""
    process = handle.process
    if process is None:
        return None
    await _exited_within(process, seconds)
    return process.returncode


async def stop_process(process: anyio.abc.Process) -> None:
    """Close stdin, wait a little, then terminate the process group; always release the pipes."""
    if process.stdin is not None:
        with suppress(OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            await process.stdin.aclose()
    if not await _exited_within(process, EXIT_GRACE_SECONDS):
        await terminate_posix_process_tree(process, KILL_GRACE_SECONDS)
        await _exited_within(process, KILL_GRACE_SECONDS * 2)
    with anyio.move_on_after(KILL_GRACE_SECONDS * 2 if process.returncode is None else math.inf):
        await process.aclose()
