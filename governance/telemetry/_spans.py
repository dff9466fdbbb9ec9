"""Records in, spans and metric updates out: runs, model turns and tool calls.

Runs on the background thread only. Every span gets explicit start and end times from the
records (when the event was recorded, not when it was processed). A run's spans share the
trace id derived from its run id; a run span's id is derived from the run id and its drive,
so a span can name it as parent before it exists (a resumed call's events come before the
`run.resumed` that opens the drive they belong to).

Nothing secret goes out: arguments and outputs only as the audit chain's digests, and the only
free text (a refusal's message, a failure's error) through the audit chain's redaction.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.trace import (
    Span,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    Tracer,
    set_span_in_context,
)

from governance.screening._redaction import redact_text
from governance.telemetry import _names as n
from governance.telemetry._ids import run_span_id, run_trace_id
from governance.telemetry._metrics import Instruments
from governance.telemetry._records import ObservedEvent, Record, RunFacts, TurnRecord

# The last event of a call's span, and what the call came to.
_ENDS_CALL = {
    "execution.completed": "executed",
    "execution.failed": "failed",
    "call.rejected": "rejected",
    "approval.required": "held",
    "approval.unavailable": "blocked",
    "budget.denied": "blocked",
    "approval.revoked": "blocked",
    "approval.refused": "blocked",
}
# A reviewer's events: about a request, not a call in flight (no span of their own).
_REVIEW = frozenset(
    {"approval.approved", "approval.rejected", "approval.cancelled", "approval.expired",
     "approval.edit_refused"}
)  # fmt: skip
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_FLAGGED = "guardrail.flagged"


def _safe(value: str) -> str:
    """A string a caller or a model chose (a tool's or agent's name, a model, a run id) as the
    audit chain keeps it: redacted. Every span name and attribute goes through here."""
    return redact_text(value)


def _safe_all(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: _safe(value)
        if isinstance(value, str)
        else [_safe(v) if isinstance(v, str) else v for v in value]
        if isinstance(value, list | tuple)
        else value
        for key, value in attributes.items()
    }


@dataclass(slots=True)
class _Run:
    span: Span
    drive: str


@dataclass(slots=True)
class _Call:
    tool: str
    call_id: str
    start_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    requested_ns: int | None = None
    decided_ns: int | None = None
    effect: str | None = None
    reason: str | None = None
    approval_id: str | None = None
    resumed: bool = False
    error: str | None = None


class RunIds(IdGenerator):
    """Random ids, except the next ones the span builder asks for (a run's trace id, a run
    span's derived id). Used from the background thread only."""

    def __init__(self) -> None:
        self._random = RandomIdGenerator()
        self.next_trace_id: int | None = None
        self.next_span_id: int | None = None

    def generate_span_id(self) -> int:
        chosen, self.next_span_id = self.next_span_id, None
        return chosen if chosen is not None else self._random.generate_span_id()

    def generate_trace_id(self) -> int:
        chosen, self.next_trace_id = self.next_trace_id, None
        return chosen if chosen is not None else self._random.generate_trace_id()


class SpanBuilder:
    def __init__(self, tracer: Tracer, ids: RunIds, instruments: Instruments, role: str) -> None:
        self._tracer = tracer
        self._ids = ids
        self._instruments = instruments
        self._role = role
        self._runs: dict[str, _Run] = {}
        self._calls: dict[tuple[str, str], _Call] = {}
        # Executed or failed calls whose span waits for the output screen's `guardrail.flagged`,
        # which the firewall writes right after the outcome (same batch): ended at its outcome's
        # time by that event, by the next other record, or at the end of a drained batch.
        self._ending: dict[tuple[str, str], tuple[_Call, int]] = {}
        # Resumed calls that ended before their drive's `run.resumed`: (run id, approval id).
        self._orphans: dict[tuple[str, str], list[tuple[_Call, int]]] = {}
        # Per run id, until its last drive ends: what later drives and spans repeat.
        self._facts: dict[str, dict[str, str]] = {}
        self._trace_keys: dict[str, str] = {}  # run id -> what its ids derive from, if not it
        self._models: dict[str, tuple[str, str]] = {}

    def handle(self, record: Record) -> None:
        if self._ending and not (
            not isinstance(record, TurnRecord | RunFacts)
            and record.kind == _FLAGGED
            and (record.run_id, record.call_id) in self._ending
        ):
            self._settle_flags()
        if isinstance(record, TurnRecord):
            self._turn(record)
        elif isinstance(record, RunFacts):
            self._run_facts(record)
        elif not record.call_id:
            self._run_event(record)
        elif record.kind not in _REVIEW:
            self._call_event(record)

    def settle(self) -> None:
        """The queue is drained: end what waits for a record that did not come (a call's
        `guardrail.flagged`, a resumed call's `run.resumed`: then a root of its run's trace)."""
        self._settle_flags()
        orphans, self._orphans = self._orphans, {}
        for (run_id, _), calls in orphans.items():
            for call, end_ns in calls:
                self._emit_call(run_id, call, end_ns, self._parent(run_id))

    def _settle_flags(self) -> None:
        ending, self._ending = self._ending, {}
        for (run_id, _), (call, end_ns) in ending.items():
            self._end_call(run_id, call, end_ns)

    def close(self) -> None:
        """Shutdown: end what is still open now (calls in flight, drives not finished)."""
        self.settle()
        now = time.time_ns()
        for key in list(self._calls):
            self._end_call(key[0], self._calls.pop(key), now)
        self.settle()  # resumed calls cut short just now
        for run in self._runs.values():
            run.span.end(end_time=now)
        self._runs.clear()

    # -- runs -----------------------------------------------------------------------------------

    def _run_event(self, event: ObservedEvent) -> None:
        run_id, data = event.run_id, event.data
        if event.kind in ("run.started", "run.resumed"):
            if event.kind == "run.started":
                drive = "start"
                self._models[run_id] = (str(data.get("provider", "")), str(data.get("model", "")))
            else:
                drive = str(data.get("approval_id", "resumed"))
            self._open_run(run_id, drive, event.at_ns, data)
            return
        run = self._runs.get(run_id)
        if run is None:
            return
        if event.kind == "run.finished":
            status = str(data.get("status", ""))
            run.span.set_attribute(n.RUN_STATUS, _safe(status))
            run.span.set_attribute(n.RUN_TERMINATION, _safe(str(data.get("termination", ""))))
            run.span.end(end_time=event.at_ns)
            del self._runs[run_id]
            if status != "waiting_approval":  # no later drive will need them
                self._facts.pop(run_id, None)
                self._trace_keys.pop(run_id, None)
                self._models.pop(run_id, None)
        elif event.kind == "provider.error":
            run.span.set_attribute(n.ERROR_TYPE, _safe(str(data.get("kind", "provider_error"))))
        else:  # guardrail.*, loop.repeated_call, call.rejected: named, never their text
            run.span.add_event(event.kind, timestamp=event.at_ns)

    def _open_run(self, run_id: str, drive: str, at_ns: int, data: Mapping[str, Any]) -> None:
        stale = self._runs.pop(run_id, None)
        if stale is not None:  # a drive this process never saw finish
            stale.span.end(end_time=at_ns)
        provider, model = self._models.get(run_id, ("", ""))
        attributes: dict[str, Any] = {
            n.OPERATION_NAME: n.OP_INVOKE_AGENT,
            n.CONVERSATION_ID: run_id,
            n.RUN_ID: run_id,
            n.ROLE: self._role,
            **self._facts.get(run_id, {}),
        }
        if provider:
            attributes[n.PROVIDER_NAME] = provider
        if model:
            attributes[n.REQUEST_MODEL] = model
        if "live" in data:
            attributes[n.LIVE] = bool(data["live"])
        if drive != "start":
            attributes[n.RUN_RESUMED_BY] = drive
        if data.get("agent"):
            attributes[n.AGENT_NAME] = str(data["agent"])
        key = self._trace_keys.get(run_id, run_id)
        self._ids.next_trace_id = run_trace_id(key)
        self._ids.next_span_id = run_span_id(key, drive)
        span = self._tracer.start_span(
            n.RUN_SPAN,
            context=Context(),
            kind=SpanKind.INTERNAL,
            attributes=_safe_all(attributes),
            start_time=at_ns,
        )
        self._runs[run_id] = _Run(span, drive)
        # Calls this drive resumed, which ended before the drive's own `run.resumed` came.
        for call, end_ns in self._orphans.pop((run_id, drive), ()):
            self._emit_call(run_id, call, end_ns, set_span_in_context(span))

    def _run_facts(self, facts: RunFacts) -> None:
        if facts.trace_key is not None:
            self._trace_keys[facts.run_id] = facts.trace_key
        kept = self._facts.setdefault(facts.run_id, {})
        kept.update(facts.attributes)
        run = self._runs.get(facts.run_id)
        if run is not None:
            run.span.set_attributes(_safe_all(dict(facts.attributes)))

    def _parent(self, run_id: str) -> Context:
        """The open drive of the run; else none: the span is a root of the run's trace (a
        parent is only ever a span that is exported)."""
        run = self._runs.get(run_id)
        if run is not None:
            return set_span_in_context(run.span)
        self._ids.next_trace_id = run_trace_id(self._trace_keys.get(run_id, run_id))
        return Context()

    # -- model turns ----------------------------------------------------------------------------

    def _turn(self, turn: TurnRecord) -> None:
        attributes: dict[str, Any] = {
            n.OPERATION_NAME: n.OP_CHAT,
            n.PROVIDER_NAME: turn.provider,
            n.REQUEST_MODEL: turn.model,
            n.LIVE: turn.live,
            n.TURN_TOOL_CALLS: turn.tool_calls,
        }
        if turn.input_tokens is not None:
            attributes[n.USAGE_INPUT_TOKENS] = turn.input_tokens
        if turn.output_tokens is not None:
            attributes[n.USAGE_OUTPUT_TOKENS] = turn.output_tokens
        if turn.finish_reason:
            attributes[n.FINISH_REASONS] = [turn.finish_reason]
        if turn.error_kind:
            attributes[n.ERROR_TYPE] = turn.error_kind
        span = self._tracer.start_span(
            _safe(f"{n.CHAT_SPAN_PREFIX} {turn.model}"),
            context=self._parent(turn.run_id),
            kind=SpanKind.CLIENT,
            attributes=_safe_all(attributes),
            start_time=turn.started_ns,
        )
        if turn.error_kind:
            span.set_status(Status(StatusCode.ERROR))
        span.end(end_time=turn.ended_ns)
        # Metric attributes too: a model name is the caller's text, as on the span.
        common: dict[str, str] = {
            n.OPERATION_NAME: n.OP_CHAT,
            n.PROVIDER_NAME: _safe(turn.provider),
            n.REQUEST_MODEL: _safe(turn.model),
        }
        timed = {**common, n.ERROR_TYPE: _safe(turn.error_kind)} if turn.error_kind else common
        seconds = max(turn.ended_ns - turn.started_ns, 0) / 1e9
        self._instruments.operation_duration.record(seconds, timed)
        for kind, tokens in (("input", turn.input_tokens), ("output", turn.output_tokens)):
            if tokens is not None:
                self._instruments.token_usage.record(tokens, {**common, n.TOKEN_TYPE: kind})

    # -- tool calls -----------------------------------------------------------------------------

    def _call_event(self, event: ObservedEvent) -> None:
        key = (event.run_id, event.call_id)
        if event.kind == _FLAGGED:
            self._flagged(event, key)
            return
        call = self._calls.get(key)
        if call is None:
            call = self._calls[key] = _Call(event.tool, event.call_id, event.at_ns)
            call.attributes.update(
                {
                    n.OPERATION_NAME: n.OP_EXECUTE_TOOL,
                    n.TOOL_NAME: event.tool,
                    n.TOOL_CALL_ID: event.call_id,
                }
            )
        _read(call, event.kind, event.data, event.at_ns)
        if event.kind == "tool.requested":
            self._name_agent(event.run_id, event.data)
        ends = _ENDS_CALL.get(event.kind)
        if event.kind == "policy.decided" and call.effect == "block":
            ends = "blocked"
        if ends is not None:
            call.attributes.setdefault(n.OUTCOME, ends)
            if event.kind in ("execution.completed", "execution.failed"):
                self._ending[key] = (self._calls.pop(key), event.at_ns)
            else:
                self._end_call(event.run_id, self._calls.pop(key), event.at_ns)

    def _flagged(self, event: ObservedEvent, key: tuple[str, str]) -> None:
        """What the output screen found in a call's result: on the call's span (its findings'
        kinds, never the text), else - the span already ended - an event of the run's span.
        Never a span of its own: it is a fact about a call, not a call."""
        found = [str(kind) for kind in event.data.get("findings", ())]
        waiting = self._ending.pop(key, None)
        if waiting is not None:
            call, end_ns = waiting
            call.attributes[n.FINDINGS] = found
            self._end_call(event.run_id, call, end_ns)
            return
        if key in self._calls:
            self._calls[key].attributes[n.FINDINGS] = found
            return
        run = self._runs.get(event.run_id)
        if run is not None:
            attributes = {n.TOOL_CALL_ID: event.call_id, n.FINDINGS: found}
            run.span.add_event(event.kind, attributes=_safe_all(attributes), timestamp=event.at_ns)

    def _name_agent(self, run_id: str, data: Mapping[str, Any]) -> None:
        run = self._runs.get(run_id)
        principal = data.get("principal")
        if run is not None and isinstance(principal, Mapping) and principal.get("agent"):
            run.span.set_attribute(n.AGENT_NAME, _safe(str(principal["agent"])))

    def _end_call(self, run_id: str, call: _Call, end_ns: int) -> None:
        if call.resumed and call.approval_id and run_id not in self._runs:
            # A resumed call: the agent loop records `run.resumed` (its drive's span) right
            # after the call; it is parented there when that comes, else a root of the run's
            # trace once the batch is done (`proctor serve`, the LiteLLM guardrail and setup
            # resume calls with no drive at all).
            self._orphans.setdefault((run_id, call.approval_id), []).append((call, end_ns))
            return
        self._emit_call(run_id, call, end_ns, self._parent(run_id))

    def _emit_call(self, run_id: str, call: _Call, end_ns: int, parent: Context) -> None:
        span = self._tracer.start_span(
            _safe(f"{n.TOOL_SPAN_PREFIX} {call.tool}"),
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=_safe_all(call.attributes),
            start_time=call.start_ns,
        )
        if call.attributes.get(n.OUTCOME) == "failed":
            span.set_status(Status(StatusCode.ERROR, call.error))
        span.end(end_time=end_ns)
        if call.effect is not None:
            self._instruments.decided(call.effect, call.reason or "")
        if call.requested_ns is not None and call.decided_ns is not None:
            seconds = max(call.decided_ns - call.requested_ns, 0) / 1e9
            self._instruments.decision_duration.record(
                seconds, {n.DECISION_EFFECT: call.effect or ""}
            )


def _read(call: _Call, kind: str, data: Mapping[str, Any], at_ns: int) -> None:
    """What one event of a call says about it, as span attributes (codes, ids and digests;
    free text only redacted)."""
    attributes = call.attributes
    if kind == "tool.requested":
        call.requested_ns = at_ns
        if data.get("arguments_digest"):
            attributes[n.ARGUMENTS_DIGEST] = str(data["arguments_digest"])
    elif kind in ("policy.decided", "policy.rechecked"):
        call.decided_ns = at_ns if kind == "policy.decided" else call.decided_ns
        call.effect, call.reason = str(data.get("effect", "")), str(data.get("reason", ""))
        attributes[n.DECISION_EFFECT] = call.effect
        attributes[n.DECISION_REASON] = call.reason
        attributes[n.DECISION_RULE_IDS] = [str(r) for r in data.get("rule_ids", ())]
        attributes[n.POLICY_DIGEST] = str(data.get("policy_digest", ""))
        attributes[n.REGISTRY_DIGEST] = str(data.get("registry_digest", ""))
    elif kind == "budget.denied":
        call.effect, call.reason = "block", str(data.get("reason", "budget_exhausted"))
        attributes[n.DECISION_EFFECT] = call.effect
        attributes[n.DECISION_REASON] = call.reason
        attributes[n.BUDGET_OUTCOME] = "denied"
        for name, key in ((n.BUDGET_ID, "budget_id"), (n.BUDGET_SCOPE, "scope")):
            if data.get(key) is not None:
                attributes[name] = str(data[key])
        for name, key in ((n.BUDGET_LIMIT, "limit"), (n.BUDGET_USED, "used")):
            if isinstance(data.get(key), int):
                attributes[name] = data[key]
        if "budget_id" in data:
            attributes[n.DECISION_RULE_IDS] = [str(data["budget_id"])]
    elif kind == "approval.required":
        if data.get("approval_id"):
            call.approval_id = str(data["approval_id"])
            attributes[n.APPROVAL_ID] = call.approval_id
        attributes[n.APPROVAL_STATUS] = "pending"
    elif kind == "approval.unavailable":
        attributes[n.APPROVAL_STATUS] = "unavailable"
        attributes[n.DECISION_MESSAGE] = redact_text(str(data.get("error", "")))
    elif kind in ("approval.consumed", "approval.refused", "approval.revoked"):
        call.resumed = True
        attributes[n.CALL_RESUMED] = True
        if data.get("approval_id"):
            call.approval_id = str(data["approval_id"])
            attributes[n.APPROVAL_ID] = call.approval_id
        if kind == "approval.consumed":
            attributes[n.APPROVAL_STATUS] = "approved"
        elif kind == "approval.revoked":
            attributes[n.APPROVAL_STATUS] = "revoked"
        else:
            reason = str(data.get("reason", ""))
            attributes[n.APPROVAL_STATUS] = reason.removeprefix("approval_") or "refused"
    elif kind == "call.rejected":
        attributes[n.DECISION_REASON] = str(data.get("reason", ""))
        attributes[n.DECISION_MESSAGE] = redact_text(str(data.get("error", "")))
    elif kind == "execution.completed":
        if data.get("output_digest"):
            attributes[n.OUTPUT_DIGEST] = str(data["output_digest"])
    elif kind == "execution.failed":
        attributes[n.ERROR_TYPE] = str(data.get("reason") or "tool_error")
        call.error = redact_text(str(data.get("error") or ""))
