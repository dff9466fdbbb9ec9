"""One console process's state: its gateway (one, long-lived), the live journal, stored runs.

The gateway holds calls as *awaited*: the console's own agent turns wait in this process for
the decisions, and if the process dies, the next gateway on the same stores expires them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import Self

from governance import Clock, Gateway
from harness._loop import TurnObserver
from harness._run_store import RunStore
from harness.console._approval_watch import ApprovalWatch
from harness.console._config import ConsoleConfig
from harness.console._live import EventHub
from harness.console._providers import ProviderFactory, StubProviders
from harness.console._sessions import AgentSessions


class ConsoleState:
    def __init__(
        self,
        config: ConsoleConfig,
        *,
        gateway: Gateway | None = None,
        providers: ProviderFactory | None = None,
        clock: Clock | None = None,
        turn_observer: TurnObserver | None = None,
    ) -> None:
        """`gateway`: one already opened for `config` (the CLI's, with its checkpoint schedule),
        or None to open one here; either way the console owns and closes it. `providers`: where
        the Agent page's turns get their model (None: the bundled stub, started here).
        `turn_observer`: told of each model turn (--otel)."""
        from harness.cli._options import shipped_policy_path

        self.config = config
        self.hub = EventHub()
        self.run_store = RunStore(config.state_dir)
        self.policy_path = config.policy_path or shipped_policy_path()
        self.policy_editable = config.policy_path is not None
        self.gateway = gateway or Gateway(
            state_dir=config.state_dir,
            policy_path=self.policy_path,
            mcp_config=config.mcp_config,
            store=config.store,
            clock=clock,
            held_calls="awaited",
        )
        self.clock = self.gateway.clock
        self._closers: list[Callable[[], None]] = []
        self._closed = False
        self._lock = threading.Lock()
        try:
            # Closed in reverse: turns first (their waiting requests withdrawn while the gateway
            # is still open), then the watch, the stub, and the hub's readers.
            self.on_close(self.hub.close)
            if providers is None:
                stub = StubProviders()
                self.on_close(stub.close)
                providers = stub
            self._watch = ApprovalWatch(self.gateway.approvals, self.hub)
            self.on_close(self._watch.stop)
            self.sessions = AgentSessions(
                self.gateway, self.hub, self.run_store, providers, turn_observer=turn_observer
            )
            self.on_close(self.sessions.close)
        except BaseException:
            self.close()
            raise

    def on_close(self, closer: Callable[[], None]) -> None:
        """Run `closer` at close, before the gateway closes, last registered first."""
        self._closers.append(closer)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            for closer in reversed(self._closers):
                closer()
        finally:
            self.gateway.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
