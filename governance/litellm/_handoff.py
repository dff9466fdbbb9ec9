"""The hand-off between Proctor's firewall and LiteLLM, which executes the MCP tool itself.

Inside a LiteLLM proxy the firewall cannot run the tool: LiteLLM does, after its pre-call hook
returns. So the tool source the firewall executes through is a hand-off: when the firewall has
decided, reserved the budget and written the write-ahead record (`execution.started`) it calls
`HandoffSource.call`, which tells the waiting hook "go" with the judged arguments, then blocks
until LiteLLM reports what became of the call (its post-call hook) or the outcome timeout
passes (recorded as unknown: the tool may have run). Each governed call runs in its own worker
thread; the source finds that call's ticket through a thread-local, so nothing can be let
through that the firewall did not hand over itself.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from typing import Any

from governance.core._contracts import ToolCall, ToolDescriptor, ToolResult


class Ticket:
    """One call on its way through the firewall: the gate the hook waits on, the outcome the
    worker waits for. `go` and `abandon` race under one lock: exactly one of them wins."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._lock = threading.Lock()
        self._state = "waiting"  # -> "go" (LiteLLM may run it) | "abandoned" (the hook left)
        self.gate: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._outcome: ToolResult | None = None
        self._outcome_ready = threading.Event()

    def go(self, arguments: dict[str, Any]) -> bool:
        """From the worker: let the hook return `arguments`; False when the hook already left."""
        with self._lock:
            if self._state != "waiting":
                return False
            self._state = "go"
        self._loop.call_soon_threadsafe(_resolve, self.gate, arguments)
        return True

    def abandon(self) -> bool:
        """From the hook, when it stops waiting (cancelled): True if nothing was let through."""
        with self._lock:
            if self._state == "waiting":
                self._state = "abandoned"
                return True
            return False

    def finish(self, outcome: ToolResult) -> None:
        """What LiteLLM reports; only the first report counts."""
        with self._lock:
            if self._outcome is not None:
                return
            self._outcome = outcome
        self._outcome_ready.set()

    def wait_outcome(self, timeout: float) -> ToolResult | None:
        if not self._outcome_ready.wait(timeout):
            return None
        return self._outcome


def _resolve(gate: asyncio.Future[dict[str, Any]], arguments: dict[str, Any]) -> None:
    if not gate.done():
        gate.set_result(arguments)


class HandoffSource:
    """The tool source behind every tool LiteLLM brokers: only the firewall calls `call`, from
    the worker thread bound to the call's ticket."""

    name = "litellm"

    def __init__(self, outcome_timeout: float) -> None:
        self._outcome_timeout = outcome_timeout
        self._local = threading.local()

    def list_tools(self) -> list[ToolDescriptor]:
        return []  # tools are registered as LiteLLM first brings them, not listed up front

    def bind(self, ticket: Ticket | None) -> None:
        self._local.ticket = ticket

    def call(self, call: ToolCall) -> ToolResult:
        ticket: Ticket | None = getattr(self._local, "ticket", None)
        if ticket is None or not ticket.go(dict(call.arguments)):
            return ToolResult(
                call_id=call.call_id,
                tool=call.tool,
                outcome="failed",
                error="the LiteLLM request went away before it was let through; nothing ran",
                reason="caller_gone",
                before_effect=True,
            )
        outcome = ticket.wait_outcome(self._outcome_timeout)
        if outcome is None:
            return ToolResult(
                call_id=call.call_id,
                tool=call.tool,
                outcome="failed",
                error=f"LiteLLM reported no outcome within {self._outcome_timeout:g}s; "
                "the tool may have run",
                reason="outcome_unknown",
            )
        return replace(outcome, call_id=call.call_id, tool=call.tool)
