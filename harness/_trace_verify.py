"""Is a stored trace a run the agent loop could have produced? Pure rules, each with a name.

`trace_problems` checks a trace against the loop's own invariants before anything scores it:
ids and steps sequential, counts that add up, every executed call preceded by its decision,
refused calls without output, and a status, termination and final answer that follow from the
spans. A hand-edited trace (an executed call rewritten as blocked, a status set to
`completed`, a span deleted) breaks at least one of them; a trace written by the loop breaks
none. The digest check against the run's manifest is separate (`harness._run_verify`): these
rules catch what a digest cannot, an edit made before the digest was taken.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from harness._loop import HeldCall, RunState, claims_answer, honest_statement
from harness._spans import (
    ApprovalSpan,
    ClaimsSpan,
    GuardrailSpan,
    LoopSpan,
    ModelTurnSpan,
    Span,
    ToolCallSpan,
)
from harness._trace import Trace

_REPEATED = re.compile(r"(c[1-9][0-9]*) repeats an identical (.+) call that was already (\w+)")
_PROSE_DETAIL = "the model described a tool call in prose instead of making one"
AUDIT_STOP_ANSWER = "Stopped: the audit log could not record the run."
_NO_OUTPUT = ("blocked", "held", "not_run")


@dataclass(frozen=True, slots=True)
class TraceProblem:
    """One broken rule: `rule` names it, `where` points into the trace (`spans[2]`, `status`)."""

    rule: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def trace_problems(trace: Trace) -> list[TraceProblem]:
    """Every rule the trace breaks, in rule order; empty when it is consistent."""
    found: list[TraceProblem] = []
    for rule in RULES:
        found.extend(rule(trace))
    return found


def _at(index: int) -> str:
    return f"spans[{index}]"


# -- ids, steps and counts -------------------------------------------------------------------


def span_ids(trace: Trace) -> Iterator[TraceProblem]:
    """Span ids are s1, s2, ... in order: a deleted or inserted span leaves a gap."""
    for index, span in enumerate(trace.spans):
        if span.id != f"s{index + 1}":
            yield TraceProblem(
                "span_ids", _at(index), f"id {span.id!r} where s{index + 1} belongs (a span "
                "was removed, added or moved)"
            )  # fmt: skip
            return


def steps(trace: Trace) -> Iterator[TraceProblem]:
    """A span's step is the number of model turns so far (a model turn counts itself)."""
    turns = 0
    for index, span in enumerate(trace.spans):
        turns += isinstance(span, ModelTurnSpan)
        if span.step != turns:
            yield TraceProblem("steps", _at(index), f"step {span.step} after {turns} model turn(s)")
            return


def turns(trace: Trace) -> Iterator[TraceProblem]:
    """`turns` counts the model turn spans."""
    counted = sum(isinstance(s, ModelTurnSpan) for s in trace.spans)
    if trace.turns != counted:
        yield TraceProblem(
            "turns", "turns", f"{trace.turns} recorded, but the trace has {counted} model turn(s)"
        )


def usage(trace: Trace) -> Iterator[TraceProblem]:
    """Token usage is the sum of the model turns' usage; turns without usage are counted."""
    model_turns = [s for s in trace.spans if isinstance(s, ModelTurnSpan)]
    prompt = sum(s.usage.prompt_tokens for s in model_turns if s.usage)
    completion = sum(s.usage.completion_tokens for s in model_turns if s.usage)
    missing = sum(s.usage is None for s in model_turns)
    recorded = trace.usage
    expected = (prompt, completion, prompt + completion, missing)
    actual = (
        recorded.prompt_tokens,
        recorded.completion_tokens,
        recorded.total_tokens,
        recorded.missing_turns,
    )
    if actual != expected:
        yield TraceProblem(
            "usage",
            "usage",
            f"prompt/completion/total/missing {'/'.join(map(str, actual))} do not add up from "
            f"the model turns ({'/'.join(map(str, expected))})",
        )


def call_ids(trace: Trace) -> Iterator[TraceProblem]:
    """Calls are numbered c1, c2, ... as proposed; a call id recurs only when a held call is
    resumed (once), and a repeated call stops the run having taken its number."""
    expected = 1
    seen: dict[str, ToolCallSpan] = {}
    for index, span in enumerate(trace.spans):
        if isinstance(span, LoopSpan) and span.event == "repeated_call":
            match = _REPEATED.match(span.detail)
            number = match.group(1) if match else None
        elif isinstance(span, ToolCallSpan):
            earlier = seen.get(span.call_id)
            if earlier is not None:
                if earlier.outcome != "held" or earlier.approval_id != span.approval_id:
                    yield TraceProblem(
                        "call_ids",
                        _at(index),
                        f"call {span.call_id} appears again without being a held call resumed "
                        "with its approval",
                    )
                    return
                seen[span.call_id] = span
                continue
            seen[span.call_id] = span
            number = span.call_id
        else:
            continue
        if number != f"c{expected}":
            yield TraceProblem(
                "call_ids", _at(index), f"call id {number!r} where c{expected} belongs"
            )
            return
        expected += 1


def proposals(trace: Trace) -> Iterator[TraceProblem]:
    """Each model turn's proposed calls are answered in order, by name, in that turn; only the
    run's last turn may leave some unanswered (the run stopped), and a turn proposing no call
    is the last (it is the answer)."""
    model_turns = [i for i, s in enumerate(trace.spans) if isinstance(s, ModelTurnSpan)]
    for number, start in enumerate(model_turns, start=1):
        turn = trace.spans[start]
        assert isinstance(turn, ModelTurnSpan)
        last = number == len(model_turns)
        if not turn.tool_calls and not last:
            yield TraceProblem(
                "proposals", _at(start), "a turn without tool calls ends the run, but more follow"
            )
            return
        answers = [
            (i, s)
            for i, s in enumerate(trace.spans)
            if s.step == number and _answers_a_proposal(trace.spans, i)
        ]
        for offset, (index, answer) in enumerate(answers):
            if offset >= len(turn.tool_calls):
                yield TraceProblem(
                    "proposals", _at(index), f"answers a call model turn {number} never proposed"
                )
                return
            proposed = turn.tool_calls[offset]
            name = answer.tool if isinstance(answer, ToolCallSpan) else _repeated_tool(answer)
            same_id = not isinstance(answer, ToolCallSpan) or (
                answer.provider_call_id == proposed.id
            )
            if name != proposed.name or not same_id:
                yield TraceProblem(
                    "proposals",
                    _at(index),
                    f"answers {name!r} where model turn {number} proposed {proposed.name!r} "
                    f"({proposed.id}) next",
                )
                return
        if len(answers) < len(turn.tool_calls) and not last:
            yield TraceProblem(
                "proposals",
                _at(start),
                f"{len(turn.tool_calls)} call(s) proposed, {len(answers)} answered, and the run "
                "went on",
            )
            return
    early = [i for i, s in enumerate(trace.spans) if s.step == 0 and _answers_a_proposal(
        trace.spans, i
    )]  # fmt: skip
    for index in early[:1]:
        yield TraceProblem("proposals", _at(index), "a call before any model turn proposed it")


def _answers_a_proposal(spans: list[Span], index: int) -> bool:
    """A call's first tool span, or the repeated-call stop that took the call's number."""
    span = spans[index]
    if isinstance(span, LoopSpan):
        return span.event == "repeated_call"
    if not isinstance(span, ToolCallSpan):
        return False
    return not any(isinstance(s, ToolCallSpan) and s.call_id == span.call_id for s in spans[:index])


def _repeated_tool(span: Span) -> str | None:
    match = _REPEATED.match(span.detail) if isinstance(span, LoopSpan) else None
    return match.group(2) if match else None


# -- decisions, approvals and outputs --------------------------------------------------------


def decision_before_execution(trace: Trace) -> Iterator[TraceProblem]:
    """An executed call was allowed by policy, or ran on an approval consumed for it just before
    (approved, then executed); a blocked decision never executes."""
    for index, span in enumerate(trace.spans):
        if not isinstance(span, ToolCallSpan) or span.outcome != "executed":
            continue
        if span.effect == "block":
            yield TraceProblem(
                "decision_before_execution", _at(index), "executed although the policy blocked it"
            )
        elif span.approval_id is None and span.effect != "allow":
            yield TraceProblem(
                "decision_before_execution",
                _at(index),
                "executed without a preceding allow decision",
            )
        elif span.approval_id is not None and not _approval_consumed(trace.spans, index, span):
            yield TraceProblem(
                "decision_before_execution",
                _at(index),
                f"executed on approval {span.approval_id} without that approval being granted "
                "and consumed before it",
            )


def _approval_consumed(spans: list[Span], index: int, call: ToolCallSpan) -> bool:
    statuses = [
        s.status
        for s in spans[:index]
        if isinstance(s, ApprovalSpan)
        and s.approval_id == call.approval_id
        and s.call_id == call.call_id
    ]
    return (
        "approved" in statuses
        and statuses[-1] == "executed"
        and (statuses.index("approved") < len(statuses) - 1)
    )


def single_use_approvals(trace: Trace) -> Iterator[TraceProblem]:
    """An approval runs at most one call."""
    used: set[str] = set()
    for index, span in enumerate(trace.spans):
        if isinstance(span, ToolCallSpan) and span.outcome == "executed" and span.approval_id:
            if span.approval_id in used:
                yield TraceProblem(
                    "single_use_approvals",
                    _at(index),
                    f"approval {span.approval_id} executed a second call",
                )
            used.add(span.approval_id)


def refusal_has_no_output(trace: Trace) -> Iterator[TraceProblem]:
    """Blocked and held calls never ran, so they have no output; only an executed call has a
    result digest, and it always has one."""
    for index, span in enumerate(trace.spans):
        if not isinstance(span, ToolCallSpan):
            continue
        has_output = span.result_chars > 0 or span.truncated
        if span.outcome in _NO_OUTPUT and (has_output or span.result_digest is not None):
            yield TraceProblem(
                "refusal_has_no_output",
                _at(index),
                f"a {span.outcome} call has output (result_digest/result_chars/truncated)",
            )
        elif span.outcome != "executed" and span.result_digest is not None:
            yield TraceProblem(
                "refusal_has_no_output",
                _at(index),
                f"a {span.outcome} call has a result digest; only executed calls have one",
            )
        elif span.outcome == "executed" and span.result_digest is None:
            yield TraceProblem(
                "refusal_has_no_output", _at(index), "an executed call has no result digest"
            )
        if span.outcome != "executed" and span.result is not None:
            yield TraceProblem(
                "refusal_has_no_output",
                _at(index),
                f"a {span.outcome} call has result text; only executed calls have one",
            )


def held_calls(trace: Trace) -> Iterator[TraceProblem]:
    """A held call was held by a require_approval decision."""
    for index, span in enumerate(trace.spans):
        if isinstance(span, ToolCallSpan) and span.outcome == "held":
            if span.effect != "require_approval":
                yield TraceProblem(
                    "held_calls",
                    _at(index),
                    f"held, but the decision was {span.effect or 'none'}, not require_approval",
                )


def approvals_follow_holds(trace: Trace) -> Iterator[TraceProblem]:
    """An approval span concerns a call held earlier, under the same approval id and tool."""
    for index, span in enumerate(trace.spans):
        if not isinstance(span, ApprovalSpan):
            continue
        held = any(
            isinstance(s, ToolCallSpan)
            and s.outcome == "held"
            and s.call_id == span.call_id
            and s.approval_id == span.approval_id
            and s.tool == span.tool
            for s in trace.spans[:index]
        )
        if not held:
            yield TraceProblem(
                "approvals_follow_holds",
                _at(index),
                f"approval {span.approval_id} for {span.call_id} follows no held call",
            )


def guardrail_calls(trace: Trace) -> Iterator[TraceProblem]:
    """A tool-output finding follows the tool span whose output it screened."""
    for index, span in enumerate(trace.spans):
        if not isinstance(span, GuardrailSpan) or span.stage != "tool_output":
            continue
        before = trace.spans[index - 1] if index else None
        if not (
            isinstance(before, ToolCallSpan)
            and before.call_id == span.call_id
            and before.outcome in ("executed", "failed")
        ):
            yield TraceProblem(
                "guardrail_calls",
                _at(index),
                f"screens the output of {span.call_id}, which is not the call just before it",
            )


# -- how the run ended -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Ending:
    status: str
    termination: str
    detail: str = ""
    held: ToolCallSpan | None = None


def ending(trace: Trace) -> Iterator[TraceProblem]:
    """Status and termination follow from the spans; nothing follows the event that ended it."""
    derived = _derive_ending(trace)
    if isinstance(derived, TraceProblem):
        yield derived
        return
    if derived is None:
        return
    if (trace.status, trace.termination) != (derived.status, derived.termination):
        yield TraceProblem(
            "ending",
            "status",
            f"{trace.status}/{trace.termination} recorded, but the spans end the run "
            f"{derived.status}/{derived.termination}",
        )


def final_answer(trace: Trace) -> Iterator[TraceProblem]:
    """A completed run answers with the model's text; any other status with the loop's honest
    statement of what happened (never a claim of success)."""
    derived = _derive_ending(trace)
    if not isinstance(derived, _Ending):
        return
    if (trace.status, trace.termination) != (derived.status, derived.termination):
        return  # `ending` reports it; the answer cannot be judged against a wrong status
    if trace.termination == "audit_unavailable":
        expected = AUDIT_STOP_ANSWER
    elif trace.status == "completed":
        checked = trace.spans[-1] if trace.spans else None
        # A flagged answer was annotated or replaced as its claims span says.
        expected = (
            claims_answer(trace.model_text, checked, trace.tool_spans)  # type: ignore[assignment]
            if isinstance(checked, ClaimsSpan)
            else trace.model_text
        )
    else:
        expected = honest_statement(_state_for(trace, derived), derived.detail)
    if trace.final_answer != expected:
        yield TraceProblem(
            "final_answer",
            "final_answer",
            f"does not match a {trace.status} run's answer: {_short(expected)}",
        )


def _short(text: str | None, limit: int = 120) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _state_for(trace: Trace, derived: _Ending) -> RunState:
    held = derived.held
    parked = None
    if held is not None and held.approval_id is not None:
        parked = HeldCall(
            approval_id=held.approval_id,
            call_id=held.call_id,
            provider_call_id=held.provider_call_id,
            tool=held.tool,
            arguments={},
        )
    return RunState(
        run_id=trace.run_id,
        actor="",
        agent="",
        team="",
        request="",
        messages=[],
        status=derived.status,  # type: ignore[arg-type]
        termination=derived.termination,  # type: ignore[arg-type]
        turns=trace.turns,
        held=parked,
        spans=list(trace.spans),
    )


def _derive_ending(trace: Trace) -> _Ending | TraceProblem | None:
    """How the spans end the run; None when they cannot tell (the audit log failed mid-run)."""
    spans = trace.spans
    if trace.termination == "audit_unavailable":
        if trace.status != "failed":
            return TraceProblem(
                "ending", "status", f"{trace.status}/audit_unavailable: an audit stop is failed"
            )
        return None  # the loop stops wherever the audit write failed; no span marks it
    if not spans:
        return TraceProblem("ending", "spans", "no spans: the run neither answered nor stopped")
    for index, span in enumerate(spans):
        stop = _stop_event(span)
        if stop is not None and index != len(spans) - 1:
            return TraceProblem(
                "ending", _at(index), f"the run stopped here ({stop.termination}) but spans follow"
            )
    last = spans[-1]
    if isinstance(last, ClaimsSpan) and len(spans) > 1:
        last = spans[-2]  # the answer's claims check follows the turn that answered
    stop = _stop_event(last)
    if stop is not None:
        return stop
    if isinstance(last, ModelTurnSpan) and not last.tool_calls:
        outcomes = {s.outcome for s in trace.tool_spans}
        status = "blocked" if "blocked" in outcomes else "failed" if "failed" in outcomes else (
            "completed"
        )  # fmt: skip
        return _Ending(status, "answered")
    held = _still_held(spans)
    if held is not None:
        return _Ending("waiting_approval", "held_for_approval", held=held)
    return TraceProblem(
        "ending", _at(len(spans) - 1), "the trace ends without an answer, a hold or a stop event"
    )


def _stop_event(span: Span) -> _Ending | None:
    if isinstance(span, LoopSpan):
        if span.event in ("max_steps", "provider_error"):
            return _Ending(span.event, span.event, span.detail)
        if span.event == "repeated_call":
            match = _REPEATED.match(span.detail)
            detail = f"{match.group(2)} was {match.group(3)}" if match else span.detail
            return _Ending("failed", "repeated_call", detail)
    if isinstance(span, GuardrailSpan):
        if span.stage == "input" and span.verdict == "rejected":
            return _Ending("input_rejected", "input_rejected", ", ".join(span.findings))
        if span.stage == "answer":
            return _Ending("failed", "answered", _PROSE_DETAIL)
    return None


def _still_held(spans: list[Span]) -> ToolCallSpan | None:
    """The held call the trace ends on: held, never resumed, and only its approvals after it."""
    for index in range(len(spans) - 1, -1, -1):
        span = spans[index]
        if isinstance(span, ToolCallSpan):
            return span if span.outcome == "held" else None
        if not isinstance(span, ApprovalSpan):
            return None
    return None


def audit_summary(trace: Trace) -> Iterator[TraceProblem]:
    """A valid chain names no bad seq; a checkpoint covers no more than the log holds."""
    audit = trace.audit
    if audit.valid and audit.first_bad_seq is not None:
        yield TraceProblem(
            "audit_summary", "audit", f"valid, yet its first bad seq is {audit.first_bad_seq}"
        )
    found = audit.checkpoint
    if found is not None and found.checkpointed_events > found.events:
        yield TraceProblem(
            "audit_summary", "audit.checkpoint",
            f"covers {found.checkpointed_events} events of a log that holds {found.events}",
        )  # fmt: skip
    if found is not None and found.status == "verified" and found.checkpoints < 1:
        yield TraceProblem("audit_summary", "audit.checkpoint", "verified, yet none was written")


RULES: tuple[Callable[[Trace], Iterator[TraceProblem]], ...] = (
    span_ids,
    steps,
    turns,
    usage,
    call_ids,
    proposals,
    decision_before_execution,
    single_use_approvals,
    refusal_has_no_output,
    held_calls,
    approvals_follow_holds,
    guardrail_calls,
    ending,
    final_answer,
    audit_summary,
)
"""Every rule, in the order problems are reported."""
