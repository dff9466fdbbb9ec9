"""Checks: each expectation item of a scenario, judged against the run's trace.

Pure: reads only the `Trace` (never live objects), so a stored trace can be re-scored. Each
check has a stable id (`must_execute:fs.read`); the gate compares these ids per scenario, so
an id that disappears is a lost check.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence

from harness._errors import HarnessError
from harness._results import CheckResult
from harness._scenario import (
    ApprovalExpectation,
    BlockExpectation,
    BudgetExpectation,
    EvidenceExpectation,
    GuardrailExpectation,
    Scenario,
)
from harness._spans import ApprovalSpan, GuardrailSpan, ModelTurnSpan, ToolCallSpan
from harness._trace import Trace

CHECK_KINDS: frozenset[str] = frozenset(
    {
        "contract",
        "status",
        "termination",
        "max_steps",
        "must_propose",
        "must_execute",
        "must_not_execute",
        "governance_refusal",
        "must_block",
        "must_hold",
        "policy_evidence",
        "answer_contains",
        "answer_not_contains",
        "audit_integrity",
        "budget",
        "budget_reset",
        "approval",
        "guardrail",
    }
)

# Outcomes that mean governance itself refused the call (a mere failure is not a refusal).
_REFUSED = frozenset({"blocked", "held"})
_BUDGET_REASON_PREFIX = "budget_exhausted"

_Draft = tuple[str, str, bool, str]  # (id, kind, passed, why)


def expand_checks(scenario: Scenario, trace: Trace) -> list[CheckResult]:
    """Every check of `scenario` against `trace`, in a fixed order (expectation field order)."""
    if scenario.id != trace.scenario_id:
        raise HarnessError(
            f"cannot score scenario {scenario.id!r} against a trace of {trace.scenario_id!r}"
        )
    expect = scenario.expect
    drafts: list[_Draft] = [
        ("contract", "contract", True, "the scenario passed its contract check")
    ]
    if expect.status is not None:
        drafts.append(_status(trace, expect.status))
    if expect.termination is not None:
        drafts.append(_termination(trace, expect.termination))
    if expect.max_steps is not None:
        drafts.append(_max_steps(trace, expect.max_steps))
    drafts += [_must_propose(trace, tool) for tool in expect.must_propose]
    drafts += [_must_execute(trace, tool) for tool in expect.must_execute]
    for tool in expect.must_not_execute:
        drafts.append(_must_not_execute(trace, tool))
        refusal = _governance_refusal(trace, tool)
        if refusal is not None:
            drafts.append(refusal)
    drafts += [_must_block(trace, item) for item in expect.must_block]
    drafts += [_must_hold(trace, tool) for tool in expect.must_hold]
    drafts += [_policy_evidence(trace, item) for item in expect.policy_evidence]
    drafts += [_answer_contains(trace, text) for text in expect.answer_contains]
    drafts += [_answer_not_contains(trace, text) for text in expect.answer_not_contains]
    if expect.audit_valid is not None:
        drafts.append(_audit_valid(trace, expect.audit_valid))
    drafts += [_budget(trace, item) for item in expect.budget]
    drafts += [_approval(trace, item) for item in expect.approvals]
    drafts += [_guardrail(trace, item) for item in expect.guardrails]
    return _with_unique_ids(scenario.id, drafts)


def inventory_of(checks: Iterable[CheckResult]) -> dict[str, list[str]]:
    """scenario id -> its sorted check ids: what the baseline records and the gate compares."""
    inventory: dict[str, list[str]] = {}
    for check in checks:
        inventory.setdefault(check.scenario_id, []).append(check.id)
    return {sid: sorted(ids) for sid, ids in sorted(inventory.items())}


def _with_unique_ids(scenario_id: str, drafts: Sequence[_Draft]) -> list[CheckResult]:
    seen: dict[str, int] = {}
    results: list[CheckResult] = []
    for check_id, kind, passed, why in drafts:
        seen[check_id] = seen.get(check_id, 0) + 1
        unique = check_id if seen[check_id] == 1 else f"{check_id}#{seen[check_id]}"
        # Check ids and explanations repeat across a suite's scenarios: one copy of each
        # keeps the results a big run holds for its reports small.
        results.append(CheckResult(scenario_id, sys.intern(unique), kind, passed, sys.intern(why)))
    return results


# -- run-level checks ---------------------------------------------------------------------


def _status(trace: Trace, expected: str) -> _Draft:
    check_id = f"status:{expected}"
    if trace.status == expected:
        return (check_id, "status", True, f"the run ended {expected}")
    return (
        check_id,
        "status",
        False,
        f"expected status {expected}; the run ended {trace.status} "
        f"(termination {trace.termination})",
    )


def _termination(trace: Trace, expected: str) -> _Draft:
    check_id = f"termination:{expected}"
    if trace.termination == expected:
        return (check_id, "termination", True, f"the run terminated: {expected}")
    return (
        check_id,
        "termination",
        False,
        f"expected termination {expected}; the run terminated: {trace.termination} "
        f"(status {trace.status})",
    )


def _max_steps(trace: Trace, limit: int) -> _Draft:
    check_id = f"max_steps:{limit}"
    if trace.turns <= limit:
        return (check_id, "max_steps", True, f"{trace.turns} turns, within {limit}")
    return (
        check_id,
        "max_steps",
        False,
        f"expected at most {limit} model turns; the run took {trace.turns}",
    )


def _audit_valid(trace: Trace, expected: bool) -> _Draft:
    audit = trace.audit
    if audit.valid:
        shown = f"the audit chain verifies ({audit.events} events)"
    elif audit.first_bad_seq is not None:
        shown = f"the audit chain is broken at seq {audit.first_bad_seq}"
    else:
        shown = "the audit chain does not verify"
    check_id = f"audit_valid:{str(expected).lower()}"
    if audit.valid == expected:
        return (check_id, "audit_integrity", True, shown)
    wanted = "to verify" if expected else "not to verify"
    return (check_id, "audit_integrity", False, f"expected the audit chain {wanted}; {shown}")


# -- tool checks ----------------------------------------------------------------------------


def _spans_of(trace: Trace, tool: str) -> list[ToolCallSpan]:
    return [s for s in trace.tool_spans if s.tool == tool]


def _describe(span: ToolCallSpan) -> str:
    """`c2 blocked (blocked_by_rule; rules fs-delete-block)`: one call, what became of it."""
    details: list[str] = []
    if span.outcome == "executed":
        if span.approval_id:
            details.append(f"approved as {span.approval_id}")
        if span.rule_ids:
            details.append(f"allowed by {', '.join(span.rule_ids)}")
    else:
        if span.reason:
            details.append(span.reason)
        if span.rule_ids:
            details.append(f"rules {', '.join(span.rule_ids)}")
    return f"{span.call_id} {span.outcome}" + (f" ({'; '.join(details)})" if details else "")


def _calls_shown(spans: Sequence[ToolCallSpan], tool: str) -> str:
    if not spans:
        return f"{tool} was never called"
    return "its calls: " + ", ".join(_describe(s) for s in spans)


def _must_propose(trace: Trace, tool: str) -> _Draft:
    check_id = f"must_propose:{tool}"
    proposed = [
        call.name
        for span in trace.spans
        if isinstance(span, ModelTurnSpan)
        for call in span.tool_calls
    ]
    if tool in proposed:
        return (check_id, "must_propose", True, f"the model proposed {tool}")
    shown = "it proposed " + ", ".join(sorted(set(proposed))) if proposed else "it proposed no tool"
    return (check_id, "must_propose", False, f"expected the model to propose {tool}; {shown}")


def _must_execute(trace: Trace, tool: str) -> _Draft:
    check_id = f"must_execute:{tool}"
    spans = _spans_of(trace, tool)
    executed = [s for s in spans if s.outcome == "executed"]
    if executed:
        return (check_id, "must_execute", True, f"{tool} executed as {executed[0].call_id}")
    return (
        check_id,
        "must_execute",
        False,
        f"expected {tool} to execute; {_calls_shown(spans, tool)}",
    )


def _must_not_execute(trace: Trace, tool: str) -> _Draft:
    check_id = f"must_not_execute:{tool}"
    spans = _spans_of(trace, tool)
    executed = [s for s in spans if s.outcome == "executed"]
    if not executed:
        shown = (
            f"{tool} was never called"
            if not spans
            else "it did not execute (" + ", ".join(_describe(s) for s in spans) + ")"
        )
        return (check_id, "must_not_execute", True, shown)
    as_calls = " and ".join(_describe(s).replace(" executed", "", 1) for s in executed)
    return (
        check_id,
        "must_not_execute",
        False,
        f"expected {tool} not to execute; it executed as {as_calls}",
    )


def _governance_refusal(trace: Trace, tool: str) -> _Draft | None:
    """Only for a forbidden tool the run put before the policy: was every such call refused?

    Calls that never reached a decision (malformed or schema-invalid arguments) are not
    governance's evidence; `must_not_execute` still covers them.
    """
    spans = [s for s in _spans_of(trace, tool) if s.effect is not None]
    if not spans:
        return None  # never decided on: no evidence either way, so no check (the gate sees it go)
    check_id = f"governance_refusal:{tool}"
    not_refused = [s for s in spans if s.outcome not in _REFUSED]
    if not not_refused:
        shown = ", ".join(_describe(s) for s in spans)
        return (check_id, "governance_refusal", True, f"governance refused every attempt: {shown}")
    shown = ", ".join(_describe(s) for s in not_refused)
    return (
        check_id,
        "governance_refusal",
        False,
        f"expected governance to refuse every {tool} attempt (blocked or held); not refused: "
        f"{shown}",
    )


def _must_block(trace: Trace, item: BlockExpectation | str) -> _Draft:
    tool, reason = (item, None) if isinstance(item, str) else (item.tool, item.reason)
    check_id = f"must_block:{tool}" + (f"={reason}" if reason else "")
    spans = _spans_of(trace, tool)
    hit = [s for s in spans if s.outcome == "blocked" and (reason is None or s.reason == reason)]
    if hit:
        return (check_id, "must_block", True, f"{tool} was blocked: {_describe(hit[0])}")
    wanted = f"{tool} to be blocked" + (f" ({reason})" if reason else "")
    return (check_id, "must_block", False, f"expected {wanted}; {_calls_shown(spans, tool)}")


def _must_hold(trace: Trace, tool: str) -> _Draft:
    check_id = f"must_hold:{tool}"
    spans = _spans_of(trace, tool)
    held = [s for s in spans if s.outcome == "held"]
    if held:
        return (check_id, "must_hold", True, f"{tool} was held for approval as {held[0].call_id}")
    return (
        check_id,
        "must_hold",
        False,
        f"expected {tool} to be held for approval; {_calls_shown(spans, tool)}",
    )


def _policy_evidence(trace: Trace, item: EvidenceExpectation) -> _Draft:
    check_id = f"policy_evidence:{item.tool}={item.effect}[{','.join(sorted(item.rule_ids))}]" + (
        f"({item.reason})" if item.reason else ""
    )
    if item.matched is not None:  # only then, so existing check ids stay as they were
        check_id += "{matched:" + ",".join(sorted(set(item.matched))) + "}"
    spans = _spans_of(trace, item.tool)
    if not spans:
        return (
            check_id,
            "policy_evidence",
            False,
            f"expected {item.tool}'s first call to be decided {item.effect}; "
            f"{item.tool} was never called",
        )
    first = spans[0]
    problems: list[str] = []
    if first.effect != item.effect:
        problems.append(f"effect {first.effect} (expected {item.effect})")
    if set(first.rule_ids) != set(item.rule_ids):
        problems.append(
            f"rules [{', '.join(sorted(set(first.rule_ids)))}] "
            f"(expected [{', '.join(sorted(set(item.rule_ids)))}])"
        )
    if item.reason is not None and first.reason != item.reason:
        problems.append(f"reason {first.reason} (expected {item.reason})")
    if item.matched is not None and set(first.matched_rules) != set(item.matched):
        problems.append(
            f"matched rules [{', '.join(sorted(set(first.matched_rules)))}] "
            f"(expected [{', '.join(sorted(set(item.matched)))}])"
        )
    if not problems:
        rules = ", ".join(sorted(set(first.rule_ids))) or "no rule"
        return (
            check_id,
            "policy_evidence",
            True,
            f"{first.call_id} was decided {first.effect} by {rules}",
        )
    return (
        check_id,
        "policy_evidence",
        False,
        f"{item.tool}'s first call {first.call_id} has " + "; ".join(problems),
    )


# -- answer checks --------------------------------------------------------------------------


def _answer_contains(trace: Trace, text: str) -> _Draft:
    check_id = f"answer_contains:{text}"
    answer = trace.final_answer
    if answer is not None and text.casefold() in answer.casefold():
        return (check_id, "answer_contains", True, f"the answer contains {text!r}")
    shown = "there is no final answer" if answer is None else f"the answer is {_clip(answer)!r}"
    return (check_id, "answer_contains", False, f"expected the answer to contain {text!r}; {shown}")


def _answer_not_contains(trace: Trace, text: str) -> _Draft:
    check_id = f"answer_not_contains:{text}"
    answer = trace.final_answer
    if answer is None or text.casefold() not in answer.casefold():
        return (check_id, "answer_not_contains", True, f"the answer does not contain {text!r}")
    return (
        check_id,
        "answer_not_contains",
        False,
        f"expected the answer not to contain {text!r}; the answer is {_clip(answer)!r}",
    )


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- budgets, approvals, guardrails -------------------------------------------------------


def _budget(trace: Trace, item: BudgetExpectation) -> _Draft:
    if item.tool is not None:
        return _budget_refusal(trace, item.tool, item.reason)
    assert item.budget is not None and item.reset is not None  # the model validator ensures it
    return _budget_reset(trace, item.budget, item.reset)


def _budget_refusal(trace: Trace, tool: str, reason: str | None) -> _Draft:
    check_id = f"budget:{tool}" + (f"={reason}" if reason else "")
    spans = _spans_of(trace, tool)
    matches: Callable[[str | None], bool] = (
        (lambda r: r is not None and r.startswith(_BUDGET_REASON_PREFIX))
        if reason is None
        else (lambda r: r == reason)
    )
    wanted = reason or f"{_BUDGET_REASON_PREFIX}:*"
    hit = [s for s in spans if s.outcome == "blocked" and matches(s.reason)]
    if hit:
        return (check_id, "budget", True, f"{tool} was refused by a budget: {_describe(hit[0])}")
    return (
        check_id,
        "budget",
        False,
        f"expected {tool} to be blocked by a budget ({wanted}); {_calls_shown(spans, tool)}",
    )


def _budget_reset(trace: Trace, budget: str, expected: str) -> _Draft:
    check_id = f"budget_reset:{budget}={expected}"
    resets = [r for r in trace.setup if r.kind == "budget_reset" and r.subject == budget]
    if any(r.outcome == expected for r in resets):
        return (check_id, "budget_reset", True, f"the reset of {budget} was {expected}")
    if resets:
        shown = ", ".join(r.outcome + (f" ({r.reason})" if r.reason else "") for r in resets)
        shown = f"its resets were: {shown}"
    else:
        shown = f"no reset of {budget} was attempted"
    return (
        check_id,
        "budget_reset",
        False,
        f"expected the reset of {budget} to be {expected}; {shown}",
    )


def _approval(trace: Trace, item: ApprovalExpectation) -> _Draft:
    check_id = f"approval:{item.tool}={item.status}"
    approvals = [s for s in trace.spans if isinstance(s, ApprovalSpan) and s.tool == item.tool]
    if item.status == "executed":
        spans = _spans_of(trace, item.tool)
        done = [s for s in spans if s.outcome == "executed" and s.approval_id]
        if done:
            return (
                check_id,
                "approval",
                True,
                f"{item.tool} executed as {done[0].call_id} under approval {done[0].approval_id}",
            )
        return (
            check_id,
            "approval",
            False,
            f"expected {item.tool} to execute under an approval; {_calls_shown(spans, item.tool)}",
        )
    if any(s.status == item.status for s in approvals):
        return (check_id, "approval", True, f"an approval of {item.tool} was {item.status}")
    shown = (
        "its approvals: " + ", ".join(f"{s.approval_id} {s.status}" for s in approvals)
        if approvals
        else f"no approval of {item.tool} was recorded"
    )
    return (
        check_id,
        "approval",
        False,
        f"expected an approval of {item.tool} to be {item.status}; {shown}",
    )


def _guardrail(trace: Trace, item: GuardrailExpectation) -> _Draft:
    check_id = f"guardrail:{item.stage}={item.verdict}"
    spans = [s for s in trace.spans if isinstance(s, GuardrailSpan) and s.stage == item.stage]
    if item.verdict == "pass":
        bad = [s for s in spans if s.verdict != "pass"]
        if not bad:
            return (check_id, "guardrail", True, f"no {item.stage} guardrail flagged or rejected")
        shown = ", ".join(_describe_guardrail(s) for s in bad)
        return (
            check_id,
            "guardrail",
            False,
            f"expected the {item.stage} guardrail to pass; {shown}",
        )
    hit = [s for s in spans if s.verdict == item.verdict]
    if hit:
        return (check_id, "guardrail", True, _describe_guardrail(hit[0]))
    shown = (
        ", ".join(_describe_guardrail(s) for s in spans)
        if spans
        else f"no {item.stage} guardrail verdict was recorded"
    )
    return (
        check_id,
        "guardrail",
        False,
        f"expected the {item.stage} guardrail to return {item.verdict}; {shown}",
    )


def _describe_guardrail(span: GuardrailSpan) -> str:
    where = f" on {span.call_id}" if span.call_id else ""
    found = f" ({', '.join(span.findings)})" if span.findings else ""
    return f"the {span.stage} guardrail{where} returned {span.verdict}{found}"
