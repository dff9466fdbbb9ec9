"""What every scenario of a suite shares, built once per process: compiled policies, the
built-in tools, and a workspace reset from a template before each scenario.

A scenario still starts from a clean, isolated state: its workspace (`files/` and the business
database) is restored from the template before it runs, and its gateway's stores are new. Only
what a scenario cannot change is shared: a compiled policy (immutable, keyed by the file's
content digest, so an edited file is compiled again) and the tool objects, which hold no state
but the workspace paths.

Scratch state lives on the fastest storage the machine offers (`/dev/shm` when it is a
writable tmpfs): a scenario's stores are throwaway, so paying for fsync buys nothing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from governance import Policy, ToolRegistry
from governance.config import decode_text
from governance.core import ConfigError, PolicyError
from governance.policy import parse_policy
from governance.tools import LocalToolSource, Workspace, builtin_tools
from harness._file_tree import FileTree
from harness._http_fixture import HttpFixture

if TYPE_CHECKING:
    from governance.mcp import (
        McpConfig,
        McpSession,
        McpToolSource,
        PinSet,
        SessionKey,
        StartedProcess,
    )

_FAST_SCRATCH = Path("/dev/shm")


def scratch_parent() -> str | None:
    """Where scenario scratch directories go: RAM-backed when available, else the default
    temporary directory (`None` lets `tempfile` choose, honouring TMPDIR)."""
    if _FAST_SCRATCH.is_dir() and os.access(_FAST_SCRATCH, os.W_OK | os.X_OK):
        return str(_FAST_SCRATCH)
    return None


class SuiteCache:
    """Per-process state shared by the scenarios of a suite. `close()` removes the scratch."""

    def __init__(self) -> None:
        self._scratch = tempfile.TemporaryDirectory(prefix="proctor-suite-", dir=scratch_parent())
        root = Path(self._scratch.name)
        self._policies: dict[tuple[Path, str], Policy] = {}
        self._state = root / "state"
        # The template: seeded once, exactly as a fresh gateway would seed its workspace.
        template = Workspace(root / "template").ensure()
        self._template_files = FileTree.read(template.files_dir)
        self._template_db = sqlite3.connect(":memory:")
        source = sqlite3.connect(template.db_path)
        try:
            source.backup(self._template_db)
        finally:
            source.close()
        # The workspace every scenario of this process runs in, reset before each one.
        self.workspace = Workspace(root / "workspace").ensure()
        # Held open so `PRAGMA data_version` tells whether a scenario committed to it.
        self._db = sqlite3.connect(self.workspace.db_path, check_same_thread=False)
        self._db_version: int | None = None  # unknown: the first reset restores
        # No scenario may depend on the outside world: `http.get` never asks DNS here, so a
        # name resolves to nothing (refused as unresolvable); IP literals are judged as ever.
        # The pages a scenario declares are the exception, served on loopback (`http_pages`).
        self.http_pages = HttpFixture()
        self._builtin = builtin_tools(
            self.workspace.root, http=self.http_pages.fetcher(resolver=_no_dns)
        )
        self._builtin_registry: ToolRegistry | None = None
        self._root = root
        self._mcp: dict[tuple[Path, str], list[McpToolSource]] = {}
        self._sessions: dict[SessionKey, McpSession] = {}  # by launch (`session_key`)

    def policy(self, path: Path) -> Policy:
        """The compiled policy of `path` as its bytes are now: parsed once per content digest."""
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise PolicyError(
                path, None, f"cannot read the policy file ({exc.strerror or exc}); check the path"
            ) from None
        key = (path, hashlib.sha256(raw).hexdigest())
        found = self._policies.get(key)
        if found is None:
            text = decode_text(raw, str(path), PolicyError, subject="policy")
            found = self._policies[key] = parse_policy(text, str(path))
        return found

    def builtin_source(self) -> LocalToolSource:
        """The built-in tools, bound to `workspace` (reset it first with `fresh_workspace`)."""
        return self._builtin

    def builtin_registry(self) -> ToolRegistry:
        """The registry of the built-in tools alone (a scenario without MCP servers), built and
        digested once: the firewall only reads it, and the tools hold no state of their own."""
        if self._builtin_registry is None:
            self._builtin_registry = ToolRegistry([self._builtin])
            _ = self._builtin_registry.digest  # computed once, before any scenario reads it
        return self._builtin_registry

    def fresh_workspace(self) -> Workspace:
        """Restore the workspace to the template: every file and row a scenario left is gone.

        Only what differs is rewritten: the files are compared with the template's (type,
        mode, bytes), the database is copied again when another connection committed to it
        since the last reset (`PRAGMA data_version`, which SQLite bumps for exactly that).
        """
        self._template_files.restore(self.workspace.files_dir)
        version = self._data_version()
        if version != self._db_version:
            self._template_db.backup(self._db)
            self._db_version = self._data_version()
        return self.workspace

    def _data_version(self) -> int:
        return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def new_state_dir(self) -> Path:
        """An empty directory for one scenario's gateway. The same path every time: a gateway
        on the memory store writes nothing there, so it is emptied only when it is not empty."""
        path = self._state
        if path.is_dir() and not path.is_symlink():
            with os.scandir(path) as entries:
                if next(entries, None) is None:
                    return path
            shutil.rmtree(path)
        elif path.is_symlink() or path.exists():
            path.unlink()
        path.mkdir()
        return path

    # -- MCP servers (one session per worker for stateless configs) ---------------------------
    #
    # A session (one server process) is keyed by its launch (`session_key`): the configs of a
    # suite that launch the same stateless server exactly alike (command, arguments, whole child
    # environment, cwd) share it, each with its own source on it, so the mapping and the pins
    # stay the config's own. A config any of whose servers is not stateless never shares.

    def prestart_mcp(self, configs: Sequence[Path]) -> None:
        """Start the servers of every stateless config in `configs` without waiting for them:
        they boot (a Python process each, ~0.5 s) while the scenarios before theirs run. Their
        processes are started before this process imports the MCP SDK (~0.4 s), so both
        imports overlap; one process per distinct launch. A config that is not stateless, or
        cannot be read, is left to its first scenario."""
        if not configs:
            return  # nothing to import either
        from governance.mcp import load_mcp_config, load_pins, session_key, start_stdio_process

        planned: list[tuple[tuple[Path, str], McpConfig, PinSet]] = []
        started: dict[SessionKey, StartedProcess] = {}
        try:
            for config in configs:
                try:
                    key = self._mcp_key(config)
                    if key in self._mcp:
                        continue
                    mcp = load_mcp_config(config)
                    if not all(spec.stateless for spec in mcp.servers):
                        continue
                    pins = load_pins(mcp.lock_path)
                except (ConfigError, OSError):
                    continue  # the scenario that uses it reports the problem when it runs
                planned.append((key, mcp, pins))
                for spec in mcp.servers:
                    launch = session_key(spec, os.environ)
                    if launch is None or launch in self._sessions or launch in started:
                        continue
                    process = start_stdio_process(spec)
                    if process is not None:
                        started[launch] = process
            for key, mcp, pins in planned:
                self._mcp[key] = self._begin_sources(mcp, pins, started)
        finally:  # whatever no session took (an import that failed) is stopped
            for process in started.values():
                process.discard()  # a no-op once its session took it

    def shared_mcp_sources(self, config: Path) -> list[McpToolSource] | None:
        """The MCP sources of `config` kept for every scenario of this worker, when each of its
        servers declares `stateless: true`; None otherwise (the gateway starts its own).

        Keyed by the config's and lock's bytes, so an edited file starts new servers.
        """
        return self._mcp_sources(config)

    def _mcp_sources(self, config: Path) -> list[McpToolSource] | None:
        from governance.mcp import load_mcp_config, load_pins

        key = self._mcp_key(config)
        found = self._mcp.get(key)
        if found is None:
            mcp = load_mcp_config(config)
            if not all(spec.stateless for spec in mcp.servers):
                return None
            pins = load_pins(mcp.lock_path)
            found = self._mcp[key] = self._begin_sources(mcp, pins, {})
        for source in found:
            source.wait_started()  # a no-op once it is up (or failed)
        return found

    def _begin_sources(
        self, mcp: McpConfig, pins: PinSet, started: dict[SessionKey, StartedProcess]
    ) -> list[McpToolSource]:
        """`mcp`'s sources, each on the session of its launch (started now unless this worker
        has it already, adopting a process from `started` when there is one)."""
        from governance.mcp import McpSession, McpToolSource, session_key  # imports the SDK

        sources: list[McpToolSource] = []
        for spec in mcp.servers:
            launch = session_key(spec, os.environ)
            if launch is None:  # not shareable (e.g. HTTP): the source owns its session
                sources.append(McpToolSource(spec, pins=pins))
                continue
            session = self._sessions.get(launch)
            if session is None:
                process = started.pop(launch, None)
                session = self._sessions[launch] = McpSession(spec, started=process)
            sources.append(McpToolSource(spec, pins=pins, session=session))
        for source in sources:
            source.begin()  # side by side: each is waited for by its first scenario
        return sources

    def release_mcp_sources(self, config: Path) -> None:
        """After a scenario: when a source of `config` is no longer pristine (crashed,
        restarted, timed out), every session it ran on is closed, with every source of any
        config on those sessions, so the next scenario starts them afresh and sees nothing of
        this one."""
        key = self._mcp_key(config)
        sources = self._mcp.get(key)
        if sources is None or all(source.reusable() for source in sources):
            return
        sessions = {id(source.session): source.session for source in sources}
        gone = [
            found
            for found, others in self._mcp.items()
            if any(id(other.session) in sessions for other in others)
        ]
        closing: list[McpToolSource | McpSession] = []
        for found in gone:
            closing.extend(self._mcp.pop(found))
        for launch in [k for k, v in self._sessions.items() if id(v) in sessions]:
            del self._sessions[launch]
        closing.extend(sessions.values())
        for item in closing:
            item.close()

    def _mcp_key(self, config: Path) -> tuple[Path, str]:
        lock = config.with_name(f"{config.stem}.lock.json")
        content = hashlib.sha256(config.read_bytes())
        content.update(lock.read_bytes() if lock.is_file() else b"")
        return config, content.hexdigest()

    def close(self) -> None:
        """Stop the shared MCP servers (side by side) and remove the scratch."""
        try:
            _stop_all(self._take_mcp_sources())
        finally:
            self._close_scratch()

    def close_in_background(self) -> threading.Thread | None:
        """`close`, with the MCP servers stopped in a (non-daemon) thread, so a suite's scoring
        and reports do not wait for them to exit; the interpreter still waits for the thread
        before it exits, so no server outlives the run. The thread, or None without servers."""
        sources = self._take_mcp_sources()
        self._close_scratch()
        if not sources:
            return None
        closer = threading.Thread(target=_stop_all, args=(sources,), name="proctor-mcp-close")
        closer.start()
        return closer

    def _take_mcp_sources(self) -> list[McpToolSource | McpSession]:
        """Every source, then every shared session (a shared session outlives its sources)."""
        taken: list[McpToolSource | McpSession] = []
        for found in self._mcp.values():
            taken.extend(found)
        taken.extend(self._sessions.values())
        self._mcp.clear()
        self._sessions.clear()
        return taken

    def _close_scratch(self) -> None:
        self.http_pages.close()
        self._template_db.close()
        self._db.close()
        self._scratch.cleanup()


def _stop_all(sources: Sequence[McpToolSource | McpSession]) -> None:
    """Close every source and session side by side: each waits for its server to exit after
    its stdin closes (~0.1 s), so one at a time would add up."""
    closers = [threading.Thread(target=source.close) for source in sources[1:]]
    for closer in closers:
        closer.start()
    try:
        if sources:
            sources[0].close()
    finally:
        for closer in closers:
            closer.join()


def _no_dns(host: str, port: int) -> list[str]:
    raise OSError(f"scenarios never resolve names ({host})")
