"""The governed agent loop: the model proposes, the firewall disposes.

The loop never executes a tool and never imports a tool source: every call goes to the
firewall (through the `GovernedTools` seam). It is stateless between turns - everything a
provider needs is in the message list - so a held run can be resumed from its stored state.
Run status is derived from what happened, and any status but `completed` replaces the model's
closing text with an honest statement (a held or blocked call is never reported as done).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NoReturn, Protocol

from pydantic import BaseModel, ConfigDict, Field

from governance import (
    AuditWriteError,
    Principal,
    RunUsage,
    ToolCall,
    ToolDescriptor,
    ToolResult,
    digest,
)
from governance.screening import (
    DEFAULT_CLAIMS_MODE,
    CallEvidence,
    ClaimsMode,
    Screener,
    check_claims,
    findings,
    redact_text,
    screen_request,
)
from harness._errors import HarnessError, ProviderError
from harness._spans import (
    ApprovalSpan,
    ClaimFindingRecord,
    ClaimsSpan,
    GuardrailSpan,
    LoopEvent,
    LoopSpan,
    ModelTurnSpan,
    Span,
    ToolCallSpan,
    UsageRecord,
)
from harness.providers._base import ModelTurn, ProposedCall, Provider, ToolSpec

if TYPE_CHECKING:
    from governance.telemetry import TurnRecord

TurnObserver = Callable[["TurnRecord"], None]

RunStatus = Literal[
    "running",
    "completed",
    "blocked",
    "waiting_approval",
    "failed",
    "max_steps",
    "provider_error",
    "input_rejected",
]
Termination = Literal[
    "answered",
    "held_for_approval",
    "repeated_call",
    "max_steps",
    "provider_error",
    "input_rejected",
    "audit_unavailable",
]

DEFAULT_SYSTEM_PROMPT = (
    "You are an assistant that acts through tools. Every tool call is checked by a policy and "
    "may be blocked or held for human approval; a tool result tells you what happened. Never "
    "claim an action happened unless its tool result says it was executed."
)
DEFAULT_MAX_STEPS = 8


class GovernedTools(Protocol):
    """What the loop may do with tools: list them and propose calls. The firewall implements it."""

    def list_tools(self) -> list[ToolDescriptor]: ...

    def call(self, call: ToolCall, *, usage: RunUsage | None = None) -> ToolResult: ...

    def resume_held(
        self, approval_id: str, call: ToolCall, *, usage: RunUsage | None = None
    ) -> ToolResult: ...

    def record_run_event(self, run_id: str, kind: str, data: Mapping[str, Any]) -> None: ...


class HeldCall(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    approval_id: str
    call_id: str
    provider_call_id: str
    tool: str
    arguments: dict[str, Any]


class CallRecord(BaseModel):
    """One call's result as the model read it: the evidence the final answer is checked
    against (ids it may state, actions it may claim)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    call_id: str
    tool: str
    outcome: str
    output: str = ""
    error: str | None = None
    reason: str | None = None
    approval_id: str | None = None
    arguments: dict[str, Any] = Field(
        default_factory=dict,
        description="What the model passed: cut out of `output` before it counts as evidence.",
    )


class RunState(BaseModel):
    """Everything about a run, serialisable: a held run is resumed from exactly this."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    actor: str
    agent: str
    team: str
    request: str
    messages: list[dict[str, Any]]
    status: RunStatus = "running"
    termination: Termination | None = None
    final_answer: str | None = None
    model_text: str | None = Field(default=None, description="The model's own closing text.")
    turns: int = 0
    calls_made: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_missing_turns: int = 0
    tainted: bool = False
    pending_calls: list[ProposedCall] = Field(default_factory=list)
    held: HeldCall | None = None
    attempted: dict[str, str] = Field(
        default_factory=dict, description="canonical call key -> outcome, to catch repeats"
    )
    spans: list[Span] = Field(default_factory=list)
    results: list[CallRecord] = Field(
        default_factory=list, description="What each call returned to the model, in order."
    )

    @property
    def principal(self) -> Principal:
        return Principal(actor=self.actor, agent=self.agent, team=self.team)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def tool_spans(self) -> list[ToolCallSpan]:
        return [s for s in self.spans if isinstance(s, ToolCallSpan)]


class _Stop(Exception):
    """Internal: the run has ended; its state is already final."""


def tool_specs(descriptors: list[ToolDescriptor]) -> list[ToolSpec]:
    """The tool list a provider sees, in registry (sorted) order."""
    return [
        {
            "type": "function",
            "function": {
                "name": d.name,
                "description": d.description,
                "parameters": dict(d.input_schema),
            },
        }
        for d in descriptors
    ]


def render_tool_result(result: ToolResult, *, untrusted: bool = False) -> str:
    """A tool message's content: JSON the model (and the replay provider) can read."""
    payload: dict[str, Any] = {"status": result.outcome}
    if result.outcome == "executed":
        payload["output"] = result.output
        if result.truncated:
            payload["truncated"] = True
        if untrusted:
            payload["untrusted"] = True  # screened as injection-shaped: data, not instructions
    else:
        payload["reason"] = result.reason
        payload["error"] = result.error
        if result.approval_id:
            payload["approval_id"] = result.approval_id
        payload["executed"] = False
        if untrusted:
            payload["untrusted"] = True
    return json.dumps(payload, sort_keys=True, ensure_ascii=False)


class AgentLoop:
    """Drives one provider against the governed tools until an answer, a hold or a limit."""

    def __init__(
        self,
        provider: Provider,
        firewall: GovernedTools,
        *,
        max_steps: int = DEFAULT_MAX_STEPS,
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        guardrails: bool = True,
        claims: ClaimsMode = DEFAULT_CLAIMS_MODE,
        screener: Screener | None = None,
        turn_observer: TurnObserver | None = None,
    ) -> None:
        """`turn_observer` (e.g. `Telemetry.model_turn`) is told of each `provider.complete`:
        when, with which model, what it cost. Nothing of it enters the run's state or spans."""
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self._provider = provider
        self._firewall = firewall
        self._max_steps = max_steps
        self._system_prompt = system_prompt
        self._guardrails = guardrails
        self._claims = claims
        self._screener = screener  # None: the heuristic default (governance.screening)
        self._turn_observer = turn_observer

    def start(self, request: str, *, run_id: str, principal: Principal) -> RunState:
        state = RunState(
            run_id=run_id,
            actor=principal.actor,
            agent=principal.agent,
            team=principal.team,
            request=request,
            messages=[
                {"role": "system", "content": self._system_prompt},
                {"role": "user", "content": request},
            ],
        )
        identity = self._provider.identity
        try:
            self._record(
                state,
                "run.started",
                {
                    "provider": identity.name,
                    "model": identity.model,
                    "live": identity.live,
                    "request_digest": digest(request),
                },
            )
            self._screen_request(state)
            self._drive(state)
        except _Stop:
            pass
        return state

    def resume(self, state: RunState) -> RunState:
        """Continue a run that was waiting for approval, once the request is decided."""
        if state.status != "waiting_approval" or state.held is None:
            raise HarnessError(f"run {state.run_id} is {state.status}, not waiting for approval")
        held = state.held
        call = ToolCall(held.call_id, held.tool, held.arguments, state.run_id, state.principal)
        result = self._firewall.resume_held(held.approval_id, call, usage=self._usage(state))
        if result.outcome == "held":
            return state  # still pending: nothing changes, nothing ran
        state.status, state.termination, state.final_answer = "running", None, None
        state.held = None
        self._add(
            state,
            ApprovalSpan,
            approval_id=held.approval_id,
            call_id=held.call_id,
            tool=held.tool,
            status={"executed": "executed", "failed": "failed"}.get(result.outcome, "refused"),
            detail=result.reason or "",
        )
        try:
            self._record(state, "run.resumed", {"approval_id": held.approval_id})
            self._finish_call(
                state,
                ProposedCall(held.provider_call_id, held.tool, json.dumps(held.arguments)),
                call,
                result,
            )
            self._process_pending(state)
            self._drive(state)
        except _Stop:
            pass
        return state

    # -- the loop -------------------------------------------------------------------------

    def _drive(self, state: RunState) -> None:
        specs = tool_specs(self._firewall.list_tools())
        while True:
            if state.turns >= self._max_steps:
                self._event(state, "max_steps", f"no final answer after {state.turns} turns")
                self._finish(state, "max_steps", "max_steps")
            try:
                turn = self._complete(state, specs)
            except ProviderError as exc:
                self._event(state, "provider_error", str(exc))
                self._record(state, "provider.error", {"kind": exc.kind, "status": exc.status})
                self._finish(state, "provider_error", "provider_error", detail=str(exc))
            state.turns += 1
            self._take_turn(state, turn)
            if not turn.tool_calls:
                # Stored and shown masked; the screen below still reads what the model wrote.
                state.model_text = redact_text(turn.text) if turn.text is not None else None
                self._screen_answer(state, turn.text or "")
                override = self._check_claims(state, turn.text or "")
                self._finish(state, self._answered_status(state), "answered", answer=override)
            state.pending_calls = list(turn.tool_calls)
            self._process_pending(state)

    def _complete(self, state: RunState, specs: Sequence[ToolSpec]) -> ModelTurn:
        """One model turn; timed and reported only when a turn observer is set."""
        observer = self._turn_observer
        if observer is None:
            return self._provider.complete(state.messages, specs)
        # Wall-clock nanoseconds for an exported span, never for the trace (determinism).
        started = time.time_ns()
        try:
            turn = self._provider.complete(state.messages, specs)
        except Exception as exc:
            kind = exc.kind if isinstance(exc, ProviderError) else type(exc).__name__
            _tell(observer, self._turn_record(state, started, None, kind))
            raise
        _tell(observer, self._turn_record(state, started, turn, None))
        return turn

    def _turn_record(
        self, state: RunState, started: int, turn: ModelTurn | None, error_kind: str | None
    ) -> TurnRecord:
        ended = time.time_ns()
        from governance.telemetry import TurnRecord  # only with an observer: no cost without

        identity = self._provider.identity
        usage = turn.usage if turn is not None else None
        return TurnRecord(
            run_id=state.run_id,
            started_ns=started,
            ended_ns=ended,
            provider=identity.name,
            model=identity.model,
            live=identity.live,
            input_tokens=usage.prompt_tokens if usage is not None else None,
            output_tokens=usage.completion_tokens if usage is not None else None,
            finish_reason=turn.finish_reason if turn is not None else None,
            tool_calls=len(turn.tool_calls) if turn is not None else 0,
            error_kind=error_kind,
        )

    def _screen_request(self, state: RunState) -> None:
        if not self._guardrails:
            return
        screening = screen_request(state.request, self._screener)
        if screening.verdict == "pass":
            return
        self._add(
            state,
            GuardrailSpan,
            stage="input",
            verdict=screening.verdict,
            findings=list(screening.findings),
        )
        self._record(
            state, "guardrail.rejected", {"stage": "input", "findings": screening.findings}
        )
        self._finish(
            state, "input_rejected", "input_rejected", detail=", ".join(screening.findings)
        )

    def _screen_answer(self, state: RunState, text: str) -> None:
        """A closing text that spells out a tool call made none: nothing ran, so say so."""
        if not self._guardrails or "tool_call_markup" not in findings(text, self._screener):
            return
        self._add(
            state,
            GuardrailSpan,
            stage="answer",
            verdict="flagged",
            findings=["tool_call_markup"],
        )
        self._record(
            state, "guardrail.flagged", {"stage": "answer", "findings": ["tool_call_markup"]}
        )
        self._finish(
            state,
            "failed",
            "answered",
            detail="the model described a tool call in prose instead of making one",
        )

    def _check_claims(self, state: RunState, text: str) -> str | None:
        """The answer's ids and action claims against this run's request and results: a
        flagged answer is recorded (trace and audit) and annotated or replaced, by `claims`."""
        if not self._guardrails or self._claims == "off":
            return None
        evidence = [CallEvidence(**record.model_dump()) for record in state.results]
        report = check_claims(text, state.request, evidence, self._firewall.list_tools())
        if report.checked == 0:
            return None  # nothing claimed, nothing to record
        span = ClaimsSpan(
            id=f"s{len(state.spans) + 1}",
            step=state.turns,
            verdict="flagged" if report.flagged else "pass",
            mode=self._claims,
            identifiers=len(report.identifiers),
            actions=len(report.actions),
            findings=[
                ClaimFindingRecord(kind=f.kind, claim=f.claim, detail=f.detail)
                for f in report.findings
            ],
        )
        state.spans.append(span)
        if not report.flagged:
            return None
        self._record(
            state,
            "guardrail.claims_flagged",
            {
                "stage": "answer",
                "mode": self._claims,
                "findings": [{"kind": f.kind, "claim": f.claim} for f in span.findings],
            },
        )
        return claims_answer(state.model_text, span, state.tool_spans)

    def _take_turn(self, state: RunState, turn: ModelTurn) -> None:
        if turn.usage is None:
            state.usage_missing_turns += 1
        else:
            state.prompt_tokens += turn.usage.prompt_tokens
            state.completion_tokens += turn.usage.completion_tokens
        message: dict[str, Any] = {"role": "assistant", "content": turn.text}
        if turn.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in turn.tool_calls
            ]
        state.messages.append(message)
        self._add(
            state,
            ModelTurnSpan,
            text=turn.text,
            tool_calls=list(turn.tool_calls),
            usage=UsageRecord(
                prompt_tokens=turn.usage.prompt_tokens,
                completion_tokens=turn.usage.completion_tokens,
                total_tokens=turn.usage.total_tokens,
            )
            if turn.usage
            else None,
            finish_reason=turn.finish_reason,
        )

    def _process_pending(self, state: RunState) -> None:
        known = {d.name for d in self._firewall.list_tools()}
        while state.pending_calls:
            record = state.pending_calls.pop(0)
            proposed = record
            state.calls_made += 1
            call_id = f"c{state.calls_made}"
            arguments = _parse_arguments(proposed.arguments)
            key = _call_key(proposed.name, arguments, proposed.arguments)
            if key in state.attempted:
                self._stop_repeated(state, proposed, call_id, state.attempted[key])
            if arguments is None:
                state.attempted[key] = "failed"
                self._malformed(state, proposed, call_id, known)
                continue
            call = ToolCall(call_id, proposed.name, arguments, state.run_id, state.principal)
            result = self._firewall.call(call, usage=self._usage(state))
            state.attempted[key] = result.outcome
            if result.outcome == "held":
                self._hold(state, proposed, call, result, known)
            self._finish_call(state, proposed, call, result, known=proposed.name in known)

    def _finish_call(
        self,
        state: RunState,
        proposed: ProposedCall,
        call: ToolCall,
        result: ToolResult,
        *,
        known: bool = True,
    ) -> None:
        self._add(state, ToolCallSpan, **_tool_span_fields(proposed, call, result, known))
        state.results.append(_call_record(result, call.call_id, call.arguments))
        # The firewall screened what the tool wrote (and recorded what it found); a run whose
        # model reads injection-shaped text is tainted from here on.
        untrusted = bool(result.findings)
        if untrusted:
            state.tainted = True
            self._add(
                state,
                GuardrailSpan,
                stage="tool_output",
                verdict="flagged",
                findings=list(result.findings),
                call_id=call.call_id,
            )
        state.messages.append(
            {
                "role": "tool",
                "tool_call_id": proposed.id,
                "content": render_tool_result(result, untrusted=untrusted),
            }
        )

    def _hold(
        self,
        state: RunState,
        proposed: ProposedCall,
        call: ToolCall,
        result: ToolResult,
        known: set[str],
    ) -> NoReturn:
        self._add(state, ToolCallSpan, **_tool_span_fields(proposed, call, result, True))
        state.results.append(_call_record(result, call.call_id, call.arguments))
        if result.approval_id is None:
            # Held with nowhere to park it: report honestly and answer the call as refused.
            state.messages.append(
                {"role": "tool", "tool_call_id": proposed.id, "content": render_tool_result(result)}
            )
            self._finish(state, "waiting_approval", "held_for_approval")
        state.held = HeldCall(
            approval_id=result.approval_id,
            call_id=call.call_id,
            provider_call_id=proposed.id,
            tool=call.tool,
            arguments=dict(call.arguments),
        )
        self._finish(state, "waiting_approval", "held_for_approval")

    def _malformed(
        self, state: RunState, proposed: ProposedCall, call_id: str, known: set[str]
    ) -> None:
        result = ToolResult(
            call_id=call_id,
            tool=proposed.name,
            outcome="failed",
            error="the arguments are not a JSON object; nothing was executed",
            reason="malformed_arguments",
        )
        self._event(state, "malformed_arguments", f"{call_id} {proposed.name}")
        self._record(
            state,
            "call.rejected",
            {"call_id": call_id, "tool": proposed.name, "reason": "malformed_arguments"},
        )
        call = ToolCall(call_id, proposed.name, {}, state.run_id, state.principal)
        state.messages.append(
            {"role": "tool", "tool_call_id": proposed.id, "content": render_tool_result(result)}
        )
        fields = _tool_span_fields(proposed, call, result, proposed.name in known)
        fields["arguments"] = None
        self._add(state, ToolCallSpan, **fields)
        state.results.append(_call_record(result, call_id))

    def _stop_repeated(
        self, state: RunState, proposed: ProposedCall, call_id: str, before: str
    ) -> NoReturn:
        detail = f"{call_id} repeats an identical {proposed.name} call that was already {before}"
        self._event(state, "repeated_call", detail)
        self._record(state, "loop.repeated_call", {"call_id": call_id, "tool": proposed.name})
        self._answer_unrun(state, proposed, "repeated_call")
        for record in state.pending_calls:
            self._answer_unrun(
                state, record, "run_stopped"
            )
        state.pending_calls = []
        self._finish(state, "failed", "repeated_call", detail=f"{proposed.name} was {before}")

    def _answer_unrun(self, state: RunState, proposed: ProposedCall, reason: str) -> None:
        content = json.dumps(
            {"status": "failed", "reason": reason, "executed": False}, sort_keys=True
        )
        state.messages.append({"role": "tool", "tool_call_id": proposed.id, "content": content})

    # -- endings ----------------------------------------------------------------------------

    def _answered_status(self, state: RunState) -> RunStatus:
        outcomes = {s.outcome for s in state.tool_spans}
        if "blocked" in outcomes:
            return "blocked"
        if "failed" in outcomes:
            return "failed"
        return "completed"

    def _finish(
        self,
        state: RunState,
        status: RunStatus,
        termination: Termination,
        *,
        detail: str = "",
        answer: str | None = None,
    ) -> NoReturn:
        state.status = status
        state.termination = termination
        if status != "completed":
            state.final_answer = honest_statement(state, detail)
        else:
            state.final_answer = answer if answer is not None else state.model_text
        try:
            self._record(state, "run.finished", {"status": status, "termination": termination})
        except _Stop:
            pass
        raise _Stop

    # -- plumbing ---------------------------------------------------------------------------

    def _usage(self, state: RunState) -> RunUsage:
        return RunUsage(tokens_used=state.total_tokens, tainted=state.tainted)

    def _add(self, state: RunState, span_type: type[Any], **fields: Any) -> None:
        state.spans.append(span_type(id=f"s{len(state.spans) + 1}", step=state.turns, **fields))

    def _event(self, state: RunState, event: LoopEvent, detail: str) -> None:
        self._add(state, LoopSpan, event=event, detail=detail)

    def _record(self, state: RunState, kind: str, data: Mapping[str, Any]) -> None:
        try:
            self._firewall.record_run_event(state.run_id, kind, data)
        except AuditWriteError:
            if kind == "run.finished":
                raise _Stop from None
            state.status, state.termination = "failed", "audit_unavailable"
            state.final_answer = "Stopped: the audit log could not record the run."
            raise _Stop from None


def _tell(observer: TurnObserver, record: TurnRecord) -> None:
    try:
        observer(record)
    except Exception:  # an observer watches; it never changes or stops the run
        pass


def _call_record(
    result: ToolResult, call_id: str, arguments: Mapping[str, Any] | None = None
) -> CallRecord:
    return CallRecord(
        arguments=dict(arguments or {}),
        call_id=call_id,
        tool=result.tool,
        outcome=result.outcome,
        output=result.output,
        error=result.error,
        reason=result.reason,
        approval_id=result.approval_id,
    )


def _parse_arguments(text: str) -> dict[str, Any] | None:
    """The model's arguments, or None when they are not one unambiguous JSON object.

    A key given twice is refused, not resolved: parsers disagree on which copy wins (Python's
    takes the last, others the first), and a reviewer reading the raw text could be shown one
    value while the other runs. NaN and Infinity are not JSON either.
    """
    try:
        value = (
            json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_not_json)
            if text.strip()
            else {}
        )
    except (ValueError, RecursionError):  # nested too deep to parse is not an object either
        return None
    return value if isinstance(value, dict) else None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise ValueError("a key is given twice")
    return value


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


def _call_key(tool: str, arguments: dict[str, Any] | None, raw: str) -> str:
    # A digest, not the arguments: the stored run keeps no second copy of a secret.
    return f"{tool} {digest(arguments if arguments is not None else raw)}"


def _tool_span_fields(
    proposed: ProposedCall, call: ToolCall, result: ToolResult, known: bool
) -> dict[str, Any]:
    decision = result.decision
    executed = result.outcome == "executed"
    return {
        "call_id": call.call_id,
        "provider_call_id": proposed.id,
        "tool": call.tool,
        "known_tool": known,
        # What really ran: a reviewer's approved edit replaces the proposed arguments. Raw
        # here: the span type redacts them (once) as it is built.
        "arguments": dict(result.arguments if result.arguments is not None else call.arguments),
        "effect": decision.effect if decision else None,
        "rule_ids": list(decision.rule_ids) if decision else [],
        "reason": result.reason if not executed else (decision.reason if decision else None),
        "outcome": result.outcome,
        "approval_id": result.approval_id,
        "result_digest": digest(result.output) if executed else None,
        "result": result.output if executed else None,  # the span type redacts and cuts it
        "result_chars": len(result.output),
        "truncated": result.truncated,
        "error": result.error,
        "matched_rules": list(decision.evidence.matched) if decision else [],
        "decisive_rules": list(decision.evidence.decisive) if decision else [],
        "decisive_conditions": list(decision.evidence.conditions) if decision else [],
    }


def honest_statement(state: RunState, detail: str = "") -> str:
    """What really happened, for any status but `completed`: never a claim of success."""
    spans = state.tool_spans
    lines: list[str] = []
    if state.status == "waiting_approval" and state.held is not None:
        lines.append(
            f"Not done yet: {state.held.tool} ({state.held.call_id}) is waiting for human "
            f"approval ({state.held.approval_id}); it has not been executed."
        )
    elif state.status == "waiting_approval":
        lines.append("Not done: a call was held for approval and could not be parked.")
    elif state.status == "max_steps":
        lines.append(f"Stopped after {state.turns} model turns without a final answer.")
    elif state.status == "provider_error":
        lines.append(f"Stopped: the model provider failed ({detail}).")
    elif state.termination == "repeated_call":
        lines.append(f"Stopped: the model repeated an identical call ({detail}).")
    elif state.status == "input_rejected":
        lines.append(f"The request was rejected before any tool ran ({detail}).")
    elif detail:
        lines.append(f"Not done: {detail}.")
    lines.extend(_what_ran(spans))
    return redact_text(" ".join(lines))


def _what_ran(spans: list[ToolCallSpan]) -> list[str]:
    lines: list[str] = []
    for span in spans:
        if span.outcome == "blocked":
            rules = f"; rules: {', '.join(span.rule_ids)}" if span.rule_ids else ""
            lines.append(f"Not done: {span.tool} was refused ({span.reason}{rules}).")
        elif span.outcome == "failed":
            lines.append(f"Not done: {span.tool} failed ({span.reason}).")
    executed = [s.tool for s in spans if s.outcome == "executed"]
    lines.append("Executed: " + ", ".join(executed) + "." if executed else "No tool was executed.")
    return lines


def claims_answer(
    model_text: str | None, span: ClaimsSpan, tool_spans: list[ToolCallSpan]
) -> str | None:
    """The final answer of a completed run whose claims were checked: the model's text, that
    text with a note of what really happened (`annotate`), or only that note (`replace`)."""
    if span.verdict == "pass" or span.mode == "off":
        return model_text
    found = "; ".join(f"{f.claim!r}: {f.detail}" for f in span.findings)
    ran = " ".join(_what_ran(tool_spans))
    if span.mode == "annotate":
        note = (
            f"[proctor: this answer states what the run does not support ({found}). "
            f"What really happened: {ran}]"
        )
        return redact_text(f"{model_text or ''}\n\n{note}")
    return redact_text(
        f"The model's answer was withheld: it stated what this run does not support ({found}). "
        f"What really happened: {ran}"
    )
