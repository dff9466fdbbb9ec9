"""The Agent page's engine: governed agent turns that run, wait and continue by themselves.

Each turn runs the governed AgentLoop in its own thread against the console's one gateway
(opened with `held_calls="awaited"`: this process waits for the decisions). A held call
waits inside its tool step, in the approval store's own `wait`, bounded by the request's
expiry, and the turn continues the moment the request is decided, by whoever and wherever
(this console, another one, `proctor approvals approve` in another process), or is refused
once it expires. Every lifecycle event of the run's calls, every run event and every status
change is published on the hub (topic `run`) as it happens, in order per run, redacted.

`close()` (console shutdown) withdraws the request of every waiting turn (audited as
`approval.cancelled`), stops every turn at its next model call and joins every thread: no
turn outlives it, and no held call is left runnable. Call it before closing the gateway.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from governance import (
    ApprovalError,
    ApprovalRequest,
    LifecycleEvent,
    Principal,
    RunUsage,
    ToolCall,
    ToolDescriptor,
    ToolResult,
    redact,
)
from governance.screening import DEFAULT_CLAIMS_MODE, ClaimsMode, redact_text
from harness._errors import HarnessError, ProviderError
from harness._loop import DEFAULT_MAX_STEPS, AgentLoop, RunState, TurnObserver, honest_statement
from harness._redact_shown import redact_shown
from harness._run_store import ProviderSpec, RunNotFound, RunStore, StoredRun
from harness.console._journal import LIVE_STATUSES, SessionJournal, SessionRecord, SessionStatus
from harness.console._live import EventHub
from harness.console._providers import ProviderFactory, TurnProvider
from harness.providers import Message, ModelTurn, Provider, ProviderIdentity, ToolSpec

if TYPE_CHECKING:
    from governance import Gateway

TOPIC = "run"
AGENT = "console-agent"
TEAM = "console"
WITHDRAWN_BY = "console"
SHUTDOWN_REASON = "the console shut down while the turn waited for this decision"
# Beyond the request's expiry, how long the wait goes on for the store to mark it expired
# (it does so on the wait's own read): the expiry is the store clock's, not ours.
EXPIRY_GRACE_SECONDS = 1.0

EventKind = Literal["call", "run", "model", "status"]


class SessionError(HarnessError):
    """A turn cannot be started or shown (blank request, unknown run, console closing)."""


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """One thing that happened in a turn, in order (`seq` from 1 per run).

    kind `call`: a lifecycle event of one call (name: `tool.requested`, `policy.decided`,
    `approval.required`, `execution.completed`, ...; `call_id` and `tool` set); `run`: a run
    event of the loop (`run.started`, `run.resumed`, `run.finished`, `provider.error`, ...);
    `model`: a model turn (name `model.turn`); `status`: the turn's status changed (name: the
    new status) or its held call was decided (name `decided`). `data` is redacted.
    `hub_id` is the EventHub id it was published under; None when read back from the audit
    log after a console restart.
    """

    seq: int
    hub_id: int | None
    kind: EventKind
    name: str
    call_id: str | None
    tool: str | None
    data: Mapping[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "hub_id": self.hub_id,
            "kind": self.kind,
            "name": self.name,
            "call_id": self.call_id,
            "tool": self.tool,
            "data": dict(self.data),
        }


class _Session:
    """One turn in this console process. Guarded by AgentSessions._lock."""

    __slots__ = ("events", "record", "state", "thread", "waiting_on")

    def __init__(self, record: SessionRecord) -> None:
        self.record = record
        self.state: RunState | None = None  # a snapshot, replaced at each change
        self.events: list[SessionEvent] = []
        self.waiting_on: str | None = None
        self.thread: threading.Thread | None = None


def _random_run_id() -> str:
    return f"console-{secrets.token_hex(6)}"


class AgentSessions:
    """Starts, watches and shows the console's agent turns (see the module docstring)."""

    def __init__(
        self,
        gateway: Gateway,
        hub: EventHub,
        run_store: RunStore,
        provider_factory: ProviderFactory,
        *,
        max_steps: int = DEFAULT_MAX_STEPS,
        claims: ClaimsMode = DEFAULT_CLAIMS_MODE,
        new_run_id: Callable[[], str] = _random_run_id,
        turn_observer: TurnObserver | None = None,
    ) -> None:
        self._gateway = gateway
        self._turn_observer = turn_observer
        self._hub = hub
        self._runs = run_store
        self._journal = SessionJournal(gateway.state_dir)
        self._providers = provider_factory
        self._max_steps = max_steps
        self._claims = claims
        self._new_run_id = new_run_id
        # One lock for the sessions, their events and the closing flag: an event is appended
        # and published under it, so hub ids follow each run's event order.
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._closing = False
        gateway.firewall.add_observer(self._observe)

    # -- the page's API ------------------------------------------------------------------------

    def start(self, request: str, operator: str) -> str:
        """Start a turn for `operator` (the principal's actor); returns its run id at once."""
        if not request.strip():
            raise SessionError("the request is empty: type what the agent should do")
        if not operator.strip():
            raise SessionError("an operator name is required")
        with self._lock:
            if self._closing:
                raise SessionError("the console is shutting down; no new turn starts")
        try:
            turn = self._providers()
        except HarnessError as exc:
            raise SessionError(f"no model provider: {exc}") from None
        run_id = self._new_run_id()
        if self._journal.load(run_id) is not None or self._runs.path(run_id).exists():
            raise SessionError(f"run {run_id} already exists")
        record = SessionRecord(
            run_id=run_id,
            operator=operator,
            request=redact_text(request),
            started_at=self._gateway.clock.now(),
            status="running",
        )
        session = _Session(record)
        thread = threading.Thread(
            target=self._turn, args=(session, request, turn), name=f"console-turn-{run_id}"
        )
        session.thread = thread
        with self._lock:
            if self._closing:
                raise SessionError("the console is shutting down; no new turn starts")
            self._journal.save(record)  # under the lock: close() never misses a started turn
            self._sessions[run_id] = session
            self._emit(session, "status", "running", data={"status": "running"})
            thread.start()
        return run_id

    def view(self, run_id: str) -> dict[str, Any]:
        """Everything the Agent page renders for one run, JSON-able and redacted: the page
        subscribes to the hub from `hub_id` to get what happens next."""
        with self._lock:
            session = self._sessions.get(run_id)
            here = (
                None
                if session is None
                else (
                    session.record,
                    session.state,
                    [e.as_json() for e in session.events],
                    self._hub.last_id,
                    session.thread is not None,
                )
            )
        record, state, events, hub_id, live = here if here is not None else self._stored(run_id)
        shown = redact_shown(state.model_dump(mode="json")) if state is not None else None
        waiting = state is not None and record.status in LIVE_STATUSES
        held = self._held_view(state) if state is not None and waiting else None
        return {
            "run_id": run_id,
            "operator": record.operator,
            "request": record.request,
            "started_at": record.started_at.isoformat(),
            "status": record.status,
            "detail": record.detail,
            "live": live,
            "termination": shown["termination"] if shown else None,
            "final_answer": shown["final_answer"] if shown else None,
            "messages": shown["messages"] if shown else [],
            "events": events,
            "held": held,
            "hub_id": hub_id,
        }

    def runs(self) -> list[dict[str, Any]]:
        """Every console turn (this process's and earlier ones'), newest first."""
        records = {r.run_id: r for r in self._journal.all()}
        with self._lock:
            records.update({s.record.run_id: s.record for s in self._sessions.values()})
            here = set(self._sessions)
        listed = [
            {
                "run_id": r.run_id,
                "operator": r.operator,
                "request": r.request,
                "started_at": r.started_at.isoformat(),
                "status": r.status if r.run_id in here else _read_back(r.status),
            }
            for r in records.values()
        ]
        listed.sort(key=lambda r: (r["started_at"], r["run_id"]), reverse=True)
        return listed

    def wait_idle(self, run_id: str, timeout: float) -> bool:
        """Block until the turn's thread has ended (tests, shutdown); False on timeout."""
        with self._lock:
            session = self._sessions.get(run_id)
            thread = session.thread if session is not None else None
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def stop(self) -> None:
        """Start shutting down without blocking: no new turn starts, every waiting turn's
        request is withdrawn, and a running turn ends at its next model call."""
        with self._lock:
            self._closing = True
            waiting = [s.waiting_on for s in self._sessions.values() if s.waiting_on]
        for approval_id in waiting:
            self._withdraw(approval_id, SHUTDOWN_REASON)

    def close(self) -> None:
        """`stop()`, then join every turn's thread: none outlives this call."""
        self.stop()
        with self._lock:
            threads = [s.thread for s in self._sessions.values() if s.thread is not None]
        for thread in threads:
            thread.join()

    # -- one turn, in its own thread -----------------------------------------------------------

    def _turn(self, session: _Session, request: str, turn: TurnProvider) -> None:
        run_id = session.record.run_id
        loop = AgentLoop(
            _Stoppable(turn.provider, self, session),
            _Watched(self._gateway, self, session),
            max_steps=self._max_steps,
            claims=self._claims,
            turn_observer=self._turn_observer,
        )
        principal = Principal(session.record.operator, AGENT, TEAM)
        try:
            state = loop.start(request, run_id=run_id, principal=principal)
            self._settle(session, state, turn.spec)
            while state.status == "waiting_approval" and state.held is not None:
                approval_id = state.held.approval_id
                decided = self._await(session, approval_id)
                if decided is None:
                    self._cancelled(session, state, turn.spec)
                    return
                self._emit_locked(session, "status", "decided", data=_decision(decided))
                state = loop.resume(state)
                if state.held is not None and state.held.approval_id == approval_id:
                    # Decided in the store, yet still held by the firewall: never spin on it.
                    self._settle(session, state, turn.spec, detail="the decision was unreadable")
                    return
                self._settle(session, state, turn.spec)
        except Exception as exc:  # a turn never dies silently: the page shows why it ended
            held = session.state.held if session.state is not None else None
            if held is not None:
                self._withdraw(held.approval_id, "the console turn failed while it waited")
            self._crashed(session, f"{type(exc).__name__}: {exc}")
        finally:
            with self._lock:
                session.waiting_on = None
                session.thread = None

    def _await(self, session: _Session, approval_id: str) -> ApprovalRequest | None:
        """The decided request, or None when the console is closing (then it is withdrawn)."""
        approvals = self._gateway.approvals
        with self._lock:
            session.waiting_on = approval_id  # close() withdraws it from here on
            closing = self._closing
        try:
            while not closing:
                expires_at = approvals.get(approval_id).expires_at
                left = (expires_at - approvals.now()).total_seconds()
                # The store's wait, not a read: it returns once the decision is also on the
                # audit chain (resuming before that would refuse an approved call).
                request = approvals.wait(approval_id, timeout=max(left, 0.0) + EXPIRY_GRACE_SECONDS)
                with self._lock:
                    closing = self._closing  # stop() sets it before it withdraws
                if request.status != "pending" and not closing:
                    return request
        finally:
            with self._lock:
                session.waiting_on = None
        self._withdraw(approval_id, SHUTDOWN_REASON)  # done by close() unless it raced us
        return None

    def _withdraw(self, approval_id: str, reason: str) -> None:
        try:
            self._gateway.firewall.withdraw(approval_id, by=WITHDRAWN_BY, reason=reason)
        except ApprovalError:
            # Decided (or withdrawn) meanwhile, or the store is down: either way this process
            # will not resume it, and an awaited request expires when its waiter is gone.
            pass

    # -- status changes: stored, then published --------------------------------------------

    def _settle(
        self, session: _Session, state: RunState, spec: ProviderSpec, *, detail: str = ""
    ) -> None:
        snapshot = state.model_copy(deep=True)
        status: SessionStatus = snapshot.status
        if detail:
            status = "failed"
        self._save(session, snapshot, spec, status, detail)

    def _cancelled(self, session: _Session, state: RunState, spec: ProviderSpec) -> None:
        """Closed while waiting: the stored run ends, so nothing resumes its withdrawn call."""
        snapshot = state.model_copy(deep=True)
        held = snapshot.held
        snapshot.status, snapshot.held = "failed", None
        what = f"{held.tool} ({held.call_id}, {held.approval_id})" if held else "the held call"
        ending = "it was withdrawn"
        if held is not None:
            status: str
            try:
                status = self._gateway.approvals.get(held.approval_id).status
            except ApprovalError:
                status = "unknown"
            if status != "cancelled":  # decided at the last moment: still never run here
                ending = f"it was {status} as it closed, and not run"
        detail = f"the console shut down while {what} waited for approval; {ending}"
        snapshot.final_answer = honest_statement(snapshot, detail)
        self._save(session, snapshot, spec, "cancelled", detail)

    def _crashed(self, session: _Session, why: str) -> None:
        record = session.record.model_copy(update={"status": "failed", "detail": why})
        try:
            self._journal.save(record)
        finally:
            with self._lock:
                session.record = record
                self._emit(session, "status", "failed", data={"status": "failed", "detail": why})

    def _save(
        self,
        session: _Session,
        state: RunState,
        spec: ProviderSpec,
        status: SessionStatus,
        detail: str,
    ) -> None:
        stored = StoredRun(
            provider=spec, max_steps=self._max_steps, claims=self._claims, state=state
        )
        self._runs.save(stored)
        record = session.record.model_copy(update={"status": status, "detail": detail})
        self._journal.save(record)
        held = self._held_view(state) if status == "waiting_approval" else None
        data = {
            "status": status,
            "detail": detail,
            "termination": state.termination,
            "final_answer": redact_text(state.final_answer) if state.final_answer else None,
            "held": held,
        }
        with self._lock:
            session.state, session.record = state, record
            self._emit(session, "status", status, data=data)

    def _held_view(self, state: RunState) -> dict[str, Any] | None:
        held = state.held
        if held is None:
            return None
        view: dict[str, Any] = {
            "approval_id": held.approval_id,
            "call_id": held.call_id,
            "tool": held.tool,
            "arguments": redact(dict(held.arguments)),
        }
        try:
            request = self._gateway.approvals.get(held.approval_id)
        except ApprovalError as exc:
            view["error"] = str(exc)
            return view
        view.update(
            status=request.status,
            expires_at=request.expires_at.isoformat(),
            rule_ids=list(request.rule_ids),
            reason=request.reason,
            risk=request.risk,
            proposed_by=request.actor,
        )
        return view

    # -- events ------------------------------------------------------------------------------

    def _observe(self, event: LifecycleEvent) -> None:
        """Firewall observer: every call event of a run of this console, as it happens (any
        thread: the turn's, or a page's that approved its call)."""
        if not event.call_id:
            return  # a run event: published by _Watched.record_run_event, with its session
        with self._lock:
            session = self._sessions.get(event.run_id)
            if session is not None:
                self._emit(session, "call", event.kind, event.call_id, event.tool, dict(event.data))

    def _run_event(self, session: _Session, kind: str, data: Mapping[str, Any]) -> None:
        with self._lock:
            self._emit(session, "run", kind, data=dict(data))

    def _emit_locked(self, session: _Session, kind: EventKind, name: str, **rest: Any) -> None:
        with self._lock:
            self._emit(session, kind, name, **rest)

    def _emit(
        self,
        session: _Session,
        kind: EventKind,
        name: str,
        call_id: str | None = None,
        tool: str | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> None:
        """Append and publish one event; the caller holds the lock."""
        shown = _jsonable(redact(dict(data or {})))
        seq = len(session.events) + 1
        payload = {"run_id": session.record.run_id, "seq": seq, "kind": kind, "name": name,
                   "call_id": call_id, "tool": tool, "data": shown}  # fmt: skip
        hub_id = self._hub.publish(TOPIC, payload)
        session.events.append(SessionEvent(seq, hub_id, kind, name, call_id, tool, shown))

    def _closing_now(self) -> bool:
        with self._lock:
            return self._closing

    # -- runs of an earlier console process ------------------------------------------------

    def _stored(
        self, run_id: str
    ) -> tuple[SessionRecord, RunState | None, list[dict[str, Any]], int, bool]:
        record = self._journal.load(run_id)
        if record is None:
            raise SessionError(f"no console run {run_id!r}")
        hub_id = self._hub.last_id
        try:
            state: RunState | None = self._runs.load(run_id).state
        except (RunNotFound, ValueError, OSError):
            state = None
        record = record.model_copy(update={"status": _read_back(record.status)})
        events = [
            SessionEvent(
                seq=n,
                hub_id=None,
                kind="call" if "call_id" in e.data else "run",
                name=e.kind,
                call_id=e.data.get("call_id"),
                tool=e.data.get("tool"),
                data={k: v for k, v in e.data.items() if k not in ("call_id", "tool")},
            ).as_json()
            for n, e in enumerate(self._gateway.audit.events(run_id), start=1)
        ]
        return record, state, events, hub_id, False


def _read_back(status: SessionStatus) -> SessionStatus:
    """A turn the journal shows live, read by another console process: it was interrupted."""
    return "interrupted" if status in LIVE_STATUSES else status


def _decision(request: ApprovalRequest) -> dict[str, Any]:
    return {
        "approval_id": request.id,
        "status": request.status,
        "decided_by": request.decided_by,
        "comment": request.comment,
        "status_reason": request.status_reason,
    }


def _jsonable(value: Any) -> dict[str, Any]:
    shown: dict[str, Any] = json.loads(json.dumps(value, default=str, ensure_ascii=False))
    return shown


class _Watched:
    """The firewall as the loop sees it, with the run's own events published as recorded."""

    def __init__(self, gateway: Gateway, sessions: AgentSessions, session: _Session) -> None:
        self._firewall = gateway.firewall
        self._sessions = sessions
        self._session = session

    def list_tools(self) -> list[ToolDescriptor]:
        return self._firewall.list_tools()

    def call(self, call: ToolCall, *, usage: RunUsage | None = None) -> ToolResult:
        return self._firewall.call(call, usage=usage)

    def resume_held(
        self, approval_id: str, call: ToolCall, *, usage: RunUsage | None = None
    ) -> ToolResult:
        return self._firewall.resume_held(approval_id, call, usage=usage)

    def record_run_event(self, run_id: str, kind: str, data: Mapping[str, Any]) -> None:
        self._firewall.record_run_event(run_id, kind, data)  # on the chain first
        self._sessions._run_event(self._session, kind, data)


class _Stoppable:
    """The turn's provider: refuses to start a model call once the console is closing (the
    run ends as provider_error, nothing more runs) and publishes each model turn."""

    def __init__(self, provider: Provider, sessions: AgentSessions, session: _Session) -> None:
        self._provider = provider
        self._sessions = sessions
        self._session = session

    @property
    def identity(self) -> ProviderIdentity:
        return self._provider.identity

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelTurn:
        if self._sessions._closing_now():
            raise ProviderError("connection", "the console is shutting down")
        turn = self._provider.complete(messages, tools)
        data = {
            "text": redact_text(turn.text) if turn.text is not None else None,
            "tool_calls": [
                {"id": c.id, "name": c.name, "arguments": redact_shown(c.arguments)}
                for c in turn.tool_calls
            ],
        }
        self._sessions._emit_locked(self._session, "model", "model.turn", data=data)
        return turn
