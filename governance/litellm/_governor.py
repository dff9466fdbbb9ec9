"""Proctor's decisions for the tool calls a LiteLLM proxy brokers, independent of LiteLLM.

`ToolCallGovernor.before` runs in LiteLLM's pre-MCP-call hook: the call goes through the
firewall (schema, policy, budgets, approvals, the write-ahead audit record) in a worker thread,
and the hook learns either "go, with these arguments" (the firewall handed the call over) or a
refusal (blocked, or held for approval: nothing ran). `after`/`failed` run in the post-call
hooks and hand LiteLLM's outcome back to the firewall, which settles the budget and records it.

A retried call after an approval: the newest request of the same actor for the same tool with
the same arguments (compared as judged: the keyed digest of the prepared arguments) that is
approved and unused runs once, through `Firewall.resume_held` (policy re-checked, budget
reserved, the approval consumed by the store's conditional update). A matching request still
pending answers "still waiting" without parking a second one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from governance._firewall import Firewall
from governance._gateway import Gateway
from governance.arguments._snapshot import ArgumentRefused
from governance.core._clock import Clock
from governance.core._contracts import Principal, ToolCall, ToolDescriptor, ToolResult
from governance.core._errors import GovernanceError
from governance.litellm._handoff import HandoffSource, Ticket
from governance.litellm._settings import GuardrailSettings
from governance.mcp._mapping import McpToolDefinition, build_descriptor, valid_tool_name
from governance.stores._approvals import ApprovalRequest
from governance.tools._registry import ToolRegistry

# What a governed call's worker hands back: the run it is recorded on, and its result.
_Governed = tuple[str, ToolResult]
APPROVE_COMMAND = "proctor approvals approve {approval_id} --reviewer NAME"
# How long the post-call hook waits for the firewall to record the outcome it was handed.
_RECORD_WAIT_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class BrokeredCall:
    """One MCP tool call LiteLLM is about to make, as its pre-call hook saw it."""

    server: str
    tool: str
    arguments: Mapping[str, Any]
    principal: Principal
    run_id: str
    call_id: str
    # LiteLLM's id for this request: the post-call hooks name the call by it again.
    correlation: str
    description: str = ""
    input_schema: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class GoAhead:
    """The firewall let the call through: LiteLLM must execute exactly `arguments`."""

    arguments: dict[str, Any]


class Refused(GovernanceError):
    """Nothing was executed: the call was blocked, or is waiting for a human."""

    def __init__(self, result: ToolResult, run_id: str) -> None:
        self.result = result
        self.run_id = run_id
        self.status: Literal["waiting_approval", "blocked"] = (
            "waiting_approval" if result.outcome == "held" else "blocked"
        )
        super().__init__(self.message)

    @property
    def message(self) -> str:
        result = self.result
        if self.status == "waiting_approval" and result.approval_id:
            command = APPROVE_COMMAND.format(approval_id=result.approval_id)
            return (
                f"waiting for approval ({result.approval_id}); nothing was executed. A reviewer "
                f"approves it with `{command}`; then send the same call again (same tool, same "
                "arguments, same key) and it runs once."
            )
        reason = result.reason or "refused"
        why = result.error or reason
        return f"blocked by Proctor ({reason}): {why}; nothing was executed"

    def detail(self) -> dict[str, Any]:
        """The refusal as JSON for the client. `error` is the sentence: it is all that LiteLLM's
        MCP endpoint passes on to an MCP client (as the text of an `isError` result)."""
        return {
            "error": self.message,
            "code": f"proctor_{self.status}",
            "status": self.status,
            "reason": self.result.reason,
            "approval_id": self.result.approval_id,
            "run_id": self.run_id,
            "call_id": self.result.call_id,
        }


def _refused(call: ToolCall, reason: str, error: str) -> Refused:
    result = ToolResult(
        call_id=call.call_id,
        tool=call.tool,
        outcome="blocked",
        error=error,
        reason=reason,
        before_effect=True,
    )
    return Refused(result, call.run_id)


class ToolCallGovernor:
    """One gateway (stores, policy, firewall) for a LiteLLM proxy process."""

    def __init__(self, settings: GuardrailSettings, *, clock: Clock | None = None) -> None:
        self.settings = settings
        self._source = HandoffSource(settings.outcome_timeout)
        self._registry = ToolRegistry()
        # A bad policy, store URL or an unavailable store raises here: the caller fails closed.
        self.gateway = Gateway(
            state_dir=settings.state_dir,
            policy_path=settings.policy_path,
            clock=clock,
            builtin=False,
            registry=self._registry,
            store=settings.store_url,
            approval_ttl_seconds=settings.approval_ttl,
        )
        # Tool calls in model responses are judged by a firewall of their own (same policy, same
        # audit log) that never executes anything: its tools are placeholders by name and facts.
        self.response_registry = ToolRegistry()
        # One memory of tainted runs for both: an MCP result read in a run taints the calls the
        # model then proposes in that run's responses.
        self.response_firewall = Firewall(
            self.response_registry,
            self.gateway.policy,
            self.gateway.audit,
            taint=self.gateway.firewall.taint,
        )
        self._lock = threading.Lock()
        self._in_flight: dict[str, tuple[Ticket, concurrent.futures.Future[_Governed]]] = {}

    def close(self) -> None:
        self.gateway.close()

    # -- the tool surface ------------------------------------------------------------------

    def register_response_tool(self, descriptor: ToolDescriptor) -> None:
        """Add a tool the response firewall judges model-proposed calls of (first one wins)."""
        with self._lock:
            if descriptor.name not in self.response_registry:
                self.response_registry.add(descriptor, self._source)

    def _register(self, call: BrokeredCall) -> str:
        """The Proctor name of the call's tool, registered at first sight (Refused when its name
        cannot be governed, or its input schema is not the one first seen)."""
        name = f"mcp.{call.server}.{call.tool}"
        probe = ToolCall(call.call_id, name, {}, call.run_id, call.principal)
        if not (valid_tool_name(call.tool) and valid_tool_name(call.server)):
            raise _refused(probe, "invalid_tool_name", f"{name!r} cannot be governed")
        definition = McpToolDefinition(
            name=call.tool,
            description=call.description,
            input_schema=dict(call.input_schema or {"type": "object"}),
        )
        mapping = self.settings.tools.get(name)
        with self._lock:
            known = self._registry.get(name)
            if known is None:
                descriptor: ToolDescriptor = build_descriptor(call.server, definition, mapping)
                self._registry.add(descriptor, self._source)
            elif call.input_schema is not None and dict(call.input_schema) != dict(
                known.input_schema
            ):
                raise _refused(
                    probe,
                    "tool_definition_changed",
                    f"{name}'s input schema changed since this proxy first saw it; restart the "
                    "proxy after reviewing the server",
                )
        return name

    # -- the pre-call hook ------------------------------------------------------------------

    async def before(self, call: BrokeredCall) -> GoAhead:
        """Govern `call`; GoAhead once the firewall hands it over, else Refused."""
        name = self._register(call)
        tool_call = ToolCall(call.call_id, name, dict(call.arguments), call.run_id, call.principal)
        ticket = Ticket(asyncio.get_running_loop())
        done: concurrent.futures.Future[_Governed] = concurrent.futures.Future()
        worker = threading.Thread(
            target=self._work,
            args=(tool_call, ticket, done),
            name=f"proctor-litellm-{call.call_id}",
            daemon=True,
        )
        worker.start()
        finished = asyncio.wrap_future(done)
        try:
            waiting: set[asyncio.Future[Any]] = {ticket.gate, finished}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if not ticket.abandon():  # let through, but LiteLLM never got to run it
                ticket.finish(_not_dispatched(tool_call))
            raise
        if ticket.gate.done():
            arguments = ticket.gate.result()
            with self._lock:
                self._in_flight[call.correlation] = (ticket, done)
            return GoAhead(arguments)
        ticket.gate.cancel()
        run_id, result = await finished
        raise Refused(result, run_id)

    def _work(
        self, call: ToolCall, ticket: Ticket, done: concurrent.futures.Future[_Governed]
    ) -> None:
        """The worker thread: the firewall, bound to this call's ticket."""
        self._source.bind(ticket)
        try:
            done.set_result(self._govern(call))
        except BaseException as exc:  # the firewall never raises; a bug here must not hang
            done.set_exception(exc)
        finally:
            self._source.bind(None)

    def _govern(self, call: ToolCall) -> tuple[str, ToolResult]:
        """The run the call is recorded on (a retry's is its request's) and its result."""
        firewall = self.gateway.firewall
        try:
            request = self._retry_of(call)
        except GovernanceError as exc:
            return call.run_id, ToolResult(
                call_id=call.call_id,
                tool=call.tool,
                outcome="blocked",
                error=f"the approval store cannot be read ({exc})",
                reason="approval_store_unavailable",
                before_effect=True,
            )
        if request is None:
            return call.run_id, firewall.call(call)
        if request.status == "pending":
            return request.run_id, ToolResult(
                call_id=request.call_id,
                tool=call.tool,
                outcome="held",
                error=f"still waiting for human approval ({request.id}); nothing was executed",
                reason="approval_pending",
                approval_id=request.id,
            )
        resumed = ToolCall(
            request.call_id,
            request.tool,
            dict(call.arguments),
            request.run_id,
            Principal(request.actor, request.agent, request.team),
        )
        return request.run_id, firewall.resume_held(request.id, resumed)

    def _retry_of(self, call: ToolCall) -> ApprovalRequest | None:
        """The held request `call` repeats: same actor, tool and judged arguments, approved and
        unused (preferred) or still pending; None when it repeats nothing."""
        try:
            prepared = self.gateway.firewall.prepare(call).arguments
        except ArgumentRefused:
            return None  # the firewall refuses it on its own
        wanted = self.gateway.audit.digest_arguments(prepared)
        approvals = self.gateway.approvals
        now = approvals.now()
        for status in ("approved", "pending"):
            matches = [
                request
                for request in approvals.list(status=status)
                if request.tool == call.tool
                and request.actor == call.principal.actor
                and request.arguments_digest == wanted
                and not request.consumed
                and request.expires_at > now
            ]
            if matches:
                return max(matches, key=lambda request: request.created_at)
        return None

    # -- the post-call hooks ----------------------------------------------------------------

    async def after(self, correlation: str, output: str, *, is_error: bool) -> None:
        """LiteLLM ran the call: hand its outcome to the firewall and wait until it is recorded."""
        outcome = ToolResult(
            call_id="",
            tool="",
            outcome="failed" if is_error else "executed",
            output="" if is_error else output,
            error=output if is_error else None,
            reason="tool_error" if is_error else None,
        )
        await self._finish(correlation, outcome)

    async def failed(self, correlation: str, error: str) -> None:
        """LiteLLM reports a failure after the call was let through: the effect is unknown."""
        outcome = ToolResult(
            call_id="", tool="", outcome="failed", error=error, reason="litellm_error"
        )
        await self._finish(correlation, outcome)

    async def withdrawn(self, correlation: str, error: str, reason: str) -> None:
        """The hook let a call through, then kept LiteLLM from running it: nothing executed."""
        outcome = ToolResult(
            call_id="", tool="", outcome="failed", error=error, reason=reason, before_effect=True
        )
        await self._finish(correlation, outcome)

    async def _finish(self, correlation: str, outcome: ToolResult) -> None:
        with self._lock:
            entry = self._in_flight.pop(correlation, None)
        if entry is None:
            return  # refused by Proctor, or already reported
        ticket, done = entry
        ticket.finish(outcome)
        try:
            await asyncio.wait_for(asyncio.wrap_future(done), _RECORD_WAIT_SECONDS)
        except (TimeoutError, Exception):
            pass  # the firewall records what it can; the client's answer does not wait longer

    @property
    def in_flight(self) -> int:
        """Calls let through whose outcome LiteLLM has not reported yet."""
        with self._lock:
            return len(self._in_flight)


def _not_dispatched(call: ToolCall) -> ToolResult:
    return ToolResult(
        call_id=call.call_id,
        tool=call.tool,
        outcome="failed",
        error="the LiteLLM request was cancelled before the tool was dispatched",
        reason="cancelled_before_dispatch",
        before_effect=True,
    )


Opener = Callable[[GuardrailSettings], ToolCallGovernor]
