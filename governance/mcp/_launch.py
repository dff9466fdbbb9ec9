"""Starting a stdio MCP server's process, without the MCP SDK.

Importing the SDK costs a Python client ~0.4 s, and a Python server as much again before it can
answer `initialize`. `start_stdio_process` starts the child first (an event-loop thread and the
process, nothing of `mcp` imported), so the child's start-up overlaps the parent's import; the
`McpToolSource` built afterwards adopts the process for its first connection. The child is
launched exactly as the source would launch it (same command, arguments, environment, cwd): a
source adopts a started process only when its own launch is equal, and stops it otherwise.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import anyio.abc

from governance.mcp._config import ALWAYS_PASSED_ENV, PYTHON_COMMANDS, McpServerSpec

STDERR_TAIL_CHARS = 4_000
_SHUTDOWN_SECONDS = 15.0
_DISCARD_SECONDS = 2.0
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class StdioLaunch:
    """What to run: a resolved executable, its arguments, its whole environment, its cwd."""

    command: str
    args: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str | None = None


def child_environment(names: Iterable[str], environ: Mapping[str, str]) -> dict[str, str]:
    """A stdio child's whole environment: PATH, HOME and the allow-listed names that are set."""
    wanted = dict.fromkeys((*ALWAYS_PASSED_ENV, *names))
    return {name: environ[name] for name in wanted if name in environ}


def resolve_command(command: str, path: str | None) -> str | None:
    """`python`/`python3` -> this interpreter; a bare name -> found on `path`; else as written."""
    if command in PYTHON_COMMANDS:
        return sys.executable
    if "/" in command:
        return command
    return shutil.which(command, path=path)


def stdio_launch(spec: McpServerSpec, environ: Mapping[str, str]) -> StdioLaunch | str:
    """How `spec`'s server is started under `environ`, or why it cannot be."""
    env = child_environment(spec.env, environ)
    command = resolve_command(spec.command, env.get("PATH"))
    if command is None:
        return f"command not found: {spec.command!r} (looked on PATH)"
    if spec.cwd is not None and not os.path.isdir(spec.cwd):
        return f"cwd {spec.cwd!r} is not a directory"
    return StdioLaunch(command=command, args=spec.args, env=env, cwd=spec.cwd)


SessionKey = tuple[object, ...]


def session_key(spec: McpServerSpec, environ: Mapping[str, str]) -> SessionKey | None:
    """What makes two configs' servers one and the same stateless server: the same stdio launch
    (resolved command, arguments, whole child environment, cwd) and connect timeout. None when
    `spec` is not stateless, not stdio, or cannot be launched: such a server is never shared."""
    if not spec.stateless or spec.transport != "stdio":
        return None
    launch = stdio_launch(spec, environ)
    if isinstance(launch, str):
        return None
    env = tuple(sorted(launch.env.items()))
    return ("stdio", launch.command, launch.args, env, launch.cwd, spec.connect_timeout)


class StdioProcess:
    """The live child behind one stdio connection: pid, exit code, stderr tail, lost flag."""

    def __init__(self) -> None:
        self.process: anyio.abc.Process | None = None
        self.lost = False  # stdout ended while nobody was shutting the connection down
        self._stderr: collections.deque[str] = collections.deque()
        self._stderr_chars = 0

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def returncode(self) -> int | None:
        return self.process.returncode if self.process is not None else None

    def stderr_tail(self) -> str:
        return "".join(self._stderr)[-STDERR_TAIL_CHARS:]

    def _note_stderr(self, text: str) -> None:
        self._stderr.append(text)
        self._stderr_chars += len(text)
        while self._stderr_chars > STDERR_TAIL_CHARS and len(self._stderr) > 1:
            self._stderr_chars -= len(self._stderr.popleft())


async def open_stdio_process(launch: StdioLaunch, handle: StdioProcess) -> anyio.abc.Process:
    """Spawn the child with pipes on all three streams, in its own session (so its whole tree
    can be stopped); raises OSError when the command cannot be started."""
    process = await anyio.open_process(
        [launch.command, *launch.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=launch.cwd,
        env=dict(launch.env),
        start_new_session=True,
    )
    handle.process = process
    return process


class LoopThread:
    """One asyncio event loop running forever in a daemon thread."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.run_until_complete(self.loop.shutdown_default_executor())
            self.loop.close()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call_soon(self, callback: Callable[[], object]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is already closed
            self.loop.call_soon_threadsafe(callback)

    def close(self, timeout: float = _SHUTDOWN_SECONDS) -> None:
        if self._thread.is_alive():
            self.call_soon(self.loop.stop)
            self._thread.join(timeout)


class StartedProcess:
    """A stdio server's process started ahead of its source, on the loop the source will use.

    Exactly one of `take` (the source adopts loop and process) or `discard` (the process group
    is killed, the loop stopped) ends it; both are idempotent and the second is a no-op.
    """

    def __init__(self, launch: StdioLaunch, loop: LoopThread, handle: StdioProcess) -> None:
        self.launch = launch
        self._loop: LoopThread | None = loop
        self._handle = handle
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        return self._handle.pid

    def take(self, launch: StdioLaunch) -> tuple[LoopThread, StdioProcess] | None:
        """The loop and process, for a source whose launch is this one's; None (and the process
        stopped) when the launches differ or it was already taken or discarded."""
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is None:
            return None
        if launch != self.launch or self._handle.returncode is not None:
            _discard(loop, self._handle)
            return None
        return loop, self._handle

    def discard(self) -> None:
        """Stop the process (nothing was ever sent to it) and its loop."""
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            _discard(loop, self._handle)


def start_stdio_process(
    spec: McpServerSpec, environ: Mapping[str, str] | None = None
) -> StartedProcess | None:
    """Start `spec`'s server process now, before the MCP SDK is imported; None when it is not a
    stdio server or cannot be started (its source then starts it, and reports why it failed)."""
    if spec.transport != "stdio":
        return None
    launch = stdio_launch(spec, dict(os.environ if environ is None else environ))
    if isinstance(launch, str):
        return None
    loop = LoopThread(f"proctor-{spec.source_name}")
    handle = StdioProcess()
    try:
        loop.submit(open_stdio_process(launch, handle)).result(spec.connect_timeout)
    except (OSError, concurrent.futures.TimeoutError):
        _discard(loop, handle)
        return None
    except BaseException:
        _discard(loop, handle)
        raise
    return StartedProcess(launch, loop, handle)


def _discard(loop: LoopThread, handle: StdioProcess) -> None:
    process = handle.process
    if process is not None:
        with contextlib.suppress(Exception):
            loop.submit(_kill(process)).result(_DISCARD_SECONDS * 2)
    loop.close()


async def _kill(process: anyio.abc.Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # its own session: the group is its tree
    with anyio.move_on_after(_DISCARD_SECONDS):
        await process.aclose()
