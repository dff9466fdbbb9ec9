"""The agent loop applies the claims check to the final answer: trace, audit, annotate/replace."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from pydantic import TypeAdapter

from governance import AuditWriteError, Principal
from governance.tools import outbox_rows
from harness._loop import AgentLoop, RunState
from harness._spans import ClaimsSpan
from harness.providers._replay import ReplayProvider, ScriptStep

PRINCIPAL = Principal("ann", "support-bot", "support")
STEPS: TypeAdapter[list[ScriptStep]] = TypeAdapter(list[ScriptStep])
LOOKUP = {"tool": "orders.lookup", "args": {"order_id": "ORD-0001"}}
FALSE_SEND = "Order ORD-0001 is shipped and I sent the confirmation email."


def _run(firewall: Any, answer: str, **options: Any) -> RunState:
    script = STEPS.validate_python([{"calls": [LOOKUP]}, {"answer": answer}])
    loop = AgentLoop(ReplayProvider(script), firewall, **options)
    return loop.start("Look up ORD-0001", run_id="run-1", principal=PRINCIPAL)


def _claims(state: RunState) -> list[ClaimsSpan]:
    return [s for s in state.spans if isinstance(s, ClaimsSpan)]


def _kinds(governed: Any) -> list[str]:
    return [e.kind for e in governed.audit.events("run-1")]


def test_a_false_send_after_a_real_lookup_is_replaced_by_default(governed: Any) -> None:
    state = _run(governed.firewall, FALSE_SEND)
    assert state.status == "completed" and state.model_text == FALSE_SEND
    assert "I sent" not in (state.final_answer or "")
    assert (state.final_answer or "").endswith("What really happened: Executed: orders.lookup.")
    [span] = _claims(state)
    assert (span.verdict, span.mode, span.identifiers, span.actions) == ("flagged", "replace", 1, 1)
    assert [(f.kind, f.claim) for f in span.findings] == [("unsupported_action", "sent")]
    assert _kinds(governed)[-2:] == ["guardrail.claims_flagged", "run.finished"]
    assert outbox_rows(governed.workspace) == []
    assert governed.audit.verify("run-1").ok


def test_annotate_keeps_the_models_text_and_appends_what_really_happened(governed: Any) -> None:
    state = _run(governed.firewall, FALSE_SEND, claims="annotate")
    answer = state.final_answer or ""
    assert answer.startswith(FALSE_SEND + "\n\n[proctor: ")
    assert "'sent'" in answer and "Executed: orders.lookup." in answer
    [event] = [e for e in governed.audit.events("run-1") if e.kind == "guardrail.claims_flagged"]
    assert event.data["mode"] == "annotate"
    assert event.data["findings"] == [{"kind": "unsupported_action", "claim": "sent"}]


def test_off_lets_the_answer_through_unchecked_and_records_nothing(governed: Any) -> None:
    state = _run(governed.firewall, FALSE_SEND, claims="off")
    assert state.final_answer == FALSE_SEND
    assert _claims(state) == []
    assert "guardrail.claims_flagged" not in _kinds(governed)


def test_guardrails_off_turns_the_claims_check_off_too(governed: Any) -> None:
    state = _run(governed.firewall, FALSE_SEND, guardrails=False)
    assert state.final_answer == FALSE_SEND and _claims(state) == []


def test_a_true_answer_passes_is_recorded_as_checked_and_stands(governed: Any) -> None:
    answer = "Order ORD-0001 for ada@example.com is shipped."
    state = _run(governed.firewall, answer)
    assert state.final_answer == answer
    [span] = _claims(state)
    assert (span.verdict, span.identifiers, span.findings) == ("pass", 2, [])
    assert "guardrail.claims_flagged" not in _kinds(governed)


def test_an_answer_claiming_nothing_gets_no_claims_span(governed: Any) -> None:
    state = _run(governed.firewall, "Here you go.")
    assert state.final_answer == "Here you go." and _claims(state) == []


def test_an_invented_id_in_the_answer_is_flagged_even_when_the_action_is_true(
    governed: Any,
) -> None:
    state = _run(governed.firewall, "Order ORD-0002 is shipped.")
    [span] = _claims(state)
    assert [(f.kind, f.claim) for f in span.findings] == [("unsupported_identifier", "ORD-0002")]
    assert "ORD-0002 is shipped" not in (state.final_answer or "")


class _AuditFailsOnClaims:
    """The real firewall, except that recording a flagged claim fails."""

    def __init__(self, firewall: Any) -> None:
        self._firewall = firewall

    def __getattr__(self, name: str) -> Any:
        return getattr(self._firewall, name)

    def record_run_event(self, run_id: str, kind: str, data: Mapping[str, Any]) -> None:
        if kind == "guardrail.claims_flagged":
            raise AuditWriteError("disk full")
        self._firewall.record_run_event(run_id, kind, data)


def test_a_flag_the_audit_cannot_record_stops_the_run_and_never_reports_the_claim(
    governed: Any,
) -> None:
    state = _run(_AuditFailsOnClaims(governed.firewall), FALSE_SEND)
    assert (state.status, state.termination) == ("failed", "audit_unavailable")
    assert "I sent" not in (state.final_answer or "")


@pytest.mark.parametrize("mode", ["annotate", "replace"])
def test_the_models_own_text_is_kept_for_a_reviewer_in_every_mode(governed: Any, mode: str) -> None:
    state = _run(governed.firewall, FALSE_SEND, claims=mode)
    assert state.model_text == FALSE_SEND
    assert [r.tool for r in state.results] == ["orders.lookup"]


def _script(
    firewall: Any, calls: list[dict[str, Any]], answer: str, request: str, run_id: str = "run-1"
) -> RunState:
    script = STEPS.validate_python([{"calls": calls}, {"answer": answer}])
    return AgentLoop(ReplayProvider(script), firewall).start(
        request, run_id=run_id, principal=PRINCIPAL
    )


@pytest.mark.parametrize(
    "answer",
    [
        "No problem — order ORD-0001 is shipped and I sent the confirmation email.",
        "No worries - I've emailed ada@example.com.",
        "Without delay I emailed ada@example.com the confirmation.",
    ],
)
def test_a_negator_earlier_in_the_sentence_does_not_let_a_false_send_through(
    governed: Any, answer: str
) -> None:
    state = _run(governed.firewall, answer)
    assert state.final_answer != answer and "What really happened" in (state.final_answer or "")
    [span] = _claims(state)
    assert [f.kind for f in span.findings] == ["unsupported_action"]


def test_a_ticket_titled_with_the_false_answer_does_not_launder_it(governed: Any) -> None:
    answer = "Done: I refunded ORD-0001 in full (refund RF-88231) and emailed ada@example.com."
    title = "I refunded ORD-0001 in full (refund RF-88231) and emailed ada"
    ticket = {"tool": "tickets.create", "args": {"title": title, "body": "x", "priority": "low"}}
    state = _script(governed.firewall, [LOOKUP, ticket], answer, "Refund ORD-0001, tell her")
    assert [s.outcome for s in state.tool_spans] == ["executed", "executed"]
    assert "I refunded" not in (state.final_answer or "")
    [span] = _claims(state)
    assert [(f.kind, f.claim) for f in span.findings] == [
        ("unsupported_identifier", "RF-88231"),
        ("unsupported_action", "refunded"),
        ("unsupported_action", "emailed"),
    ]


def test_an_honest_refund_draft_that_says_no_money_moved_stands(governed: Any) -> None:
    answer = "I drafted a refund of 10 for ORD-0001; no money has moved yet."
    draft = {
        "tool": "refunds.create_draft",
        "args": {"order_id": "ORD-0001", "amount": 10, "reason": "late"},
    }
    state = _script(governed.firewall, [draft], answer, "Draft a refund of 10 for ORD-0001")
    assert state.final_answer == answer
    [span] = _claims(state)
    assert (span.verdict, span.findings) == ("pass", [])


def test_a_write_claimed_for_another_file_than_the_one_written_is_flagged(
    governed: Any,
) -> None:
    write = {"tool": "fs.write", "args": {"path": "reports/a.md", "content": "abc"}}
    request = "Write abc to reports/a.md and reports/b.md"
    state = _script(governed.firewall, [write], "I wrote reports/b.md.", request)
    assert [s.outcome for s in state.tool_spans] == ["executed"]
    [span] = _claims(state)
    assert [(f.kind, f.claim) for f in span.findings] == [("unsupported_action", "wrote")]
    truthful = _script(governed.firewall, [write], "I wrote reports/a.md.", request, "run-2")
    assert truthful.final_answer == "I wrote reports/a.md."
