"""The trace consistency rules, one forgery at a time, on traces the loop really wrote."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness._trace import Trace
from harness._trace_verify import RULES, trace_problems
from tests.small_suite import REPO

TRACES = REPO / "baselines" / "traces"

Edit = Callable[[dict[str, Any]], None]


def _load(sid: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((TRACES / f"{sid}.json").read_text("utf-8"))
    return {**data, "run_id": "run-1"}


def _problems(sid: str, edit: Edit) -> list[tuple[str, str]]:
    data = _load(sid)
    edit(data)
    return [(p.rule, str(p)) for p in trace_problems(Trace.model_validate(data))]


def _tool_span(data: dict[str, Any], outcome: str) -> dict[str, Any]:
    span: dict[str, Any] = next(
        s for s in data["spans"] if s["kind"] == "tool_call" and s["outcome"] == outcome
    )
    return span


def _index(data: dict[str, Any], span: dict[str, Any]) -> int:
    return int(data["spans"].index(span))


@pytest.mark.parametrize("path", sorted(TRACES.glob("*.json")), ids=lambda p: p.stem)
def test_every_trace_the_loop_wrote_breaks_no_rule(path: Path) -> None:
    assert trace_problems(Trace.model_validate(_load(path.stem))) == []


def test_every_rule_is_named_after_its_function() -> None:
    names = [rule.__name__ for rule in RULES]
    assert len(set(names)) == len(names)
    assert "decision_before_execution" in names and "ending" in names


def test_an_executed_call_rewritten_as_blocked_contradicts_the_completed_status() -> None:
    def forge(data: dict[str, Any]) -> None:
        span = _tool_span(data, "executed")
        span.update(
            outcome="blocked", effect="block", result_digest=None, result_chars=0,
            reason="blocked_by_rule", result=None,
        )  # fmt: skip

    found = _problems("read-order-lookup", forge)
    assert found == [
        (
            "ending",
            "status: completed/answered recorded, but the spans end the run blocked/answered",
        )
    ]


def test_a_status_edited_to_completed_is_named_with_what_the_spans_say() -> None:
    found = _problems("block-delete-by-rule", lambda d: d.update(status="completed"))
    assert found == [
        (
            "ending",
            "status: completed/answered recorded, but the spans end the run blocked/answered",
        )
    ]


def test_a_blocked_run_whose_answer_claims_success_is_named() -> None:
    def forge(data: dict[str, Any]) -> None:
        data["final_answer"] = "I deleted the file."

    found = _problems("block-delete-by-rule", forge)
    assert [rule for rule, _ in found] == ["final_answer"]
    assert "does not match a blocked run's answer: 'Not done: fs.delete was refused" in found[0][1]


def test_a_deleted_span_leaves_a_gap_in_the_ids() -> None:
    def forge(data: dict[str, Any]) -> None:
        span = _tool_span(data, "blocked")
        del data["spans"][_index(data, span)]

    found = _problems("block-delete-by-rule", forge)
    assert (
        "span_ids",
        "spans[1]: id 's3' where s2 belongs (a span was removed, added or moved)",
    ) in (found)


def test_a_deleted_span_renumbered_still_leaves_its_proposal_unanswered() -> None:
    def forge(data: dict[str, Any]) -> None:
        span = _tool_span(data, "blocked")
        del data["spans"][_index(data, span)]
        for n, kept in enumerate(data["spans"], start=1):
            kept["id"] = f"s{n}"

    found = _problems("block-delete-by-rule", forge)
    assert [rule for rule, _ in found] == ["proposals", "ending"]
    assert found[0][1] == "spans[0]: 1 call(s) proposed, 0 answered, and the run went on"


def test_output_added_to_a_blocked_span_is_named() -> None:
    def forge(data: dict[str, Any]) -> None:
        _tool_span(data, "blocked").update(result_digest="sha256:" + "1" * 64, result_chars=12)

    found = _problems("block-delete-by-rule", forge)
    assert found == [
        (
            "refusal_has_no_output",
            "spans[1]: a blocked call has output (result_digest/result_chars/truncated)",
        )
    ]


def test_output_added_to_a_held_span_is_named() -> None:
    found = _problems(
        "refund-large-left-pending", lambda d: _tool_span(d, "held").update(result_chars=3)
    )
    assert [rule for rule, _ in found] == ["refusal_has_no_output"]


def test_an_executed_call_without_a_result_digest_is_named() -> None:
    found = _problems(
        "read-order-lookup", lambda d: _tool_span(d, "executed").update(result_digest=None)
    )
    assert found == [("refusal_has_no_output", "spans[1]: an executed call has no result digest")]


@pytest.mark.parametrize(
    ("effect", "message"),
    [
        ("block", "spans[1]: executed although the policy blocked it"),
        ("require_approval", "spans[1]: executed without a preceding allow decision"),
        (None, "spans[1]: executed without a preceding allow decision"),
    ],
)
def test_an_executed_call_needs_an_allow_decision(effect: str | None, message: str) -> None:
    found = _problems(
        "read-order-lookup", lambda d: _tool_span(d, "executed").update(effect=effect)
    )
    assert found == [("decision_before_execution", message)]


def test_an_approved_call_executed_without_its_approval_being_consumed_is_named() -> None:
    def forge(data: dict[str, Any]) -> None:
        data["spans"] = [
            s for s in data["spans"] if not (s["kind"] == "approval" and s["status"] == "executed")
        ]
        for n, kept in enumerate(data["spans"], start=1):
            kept["id"] = f"s{n}"

    found = _problems("refund-large-approved", forge)
    assert found == [
        (
            "decision_before_execution",
            "spans[3]: executed on approval apr-1 without that approval being granted and "
            "consumed before it",
        )
    ]


def test_a_rejected_call_rewritten_as_executed_is_named() -> None:
    def forge(data: dict[str, Any]) -> None:
        span = _tool_span(data, "blocked")
        span.update(outcome="executed", result_digest="sha256:" + "2" * 64, result_chars=10)

    found = _problems("refund-rejected", forge)
    assert "decision_before_execution" in [rule for rule, _ in found]


def test_a_held_call_needs_a_require_approval_decision() -> None:
    found = _problems(
        "refund-large-left-pending", lambda d: _tool_span(d, "held").update(effect="allow")
    )
    assert found == [
        ("held_calls", "spans[1]: held, but the decision was allow, not require_approval")
    ]


def test_an_approval_for_no_held_call_is_named() -> None:
    def forge(data: dict[str, Any]) -> None:
        for span in data["spans"]:
            if span["kind"] == "approval":
                span["approval_id"] = "apr-9"

    found = _problems("refund-large-left-pending", forge)
    assert found == [
        ("approvals_follow_holds", "spans[2]: approval apr-9 for c1 follows no held call")
    ]


def test_counts_that_do_not_add_up_are_named() -> None:
    assert _problems("read-order-lookup", lambda d: d.update(turns=1)) == [
        ("turns", "turns: 1 recorded, but the trace has 2 model turn(s)")
    ]
    found = _problems("read-order-lookup", lambda d: d["usage"].update(prompt_tokens=1))
    assert [rule for rule, _ in found] == ["usage"]


def test_a_renumbered_call_id_is_named() -> None:
    found = _problems("read-order-lookup", lambda d: _tool_span(d, "executed").update(call_id="c2"))
    assert found == [("call_ids", "spans[1]: call id 'c2' where c1 belongs")]


def test_a_call_the_model_never_proposed_is_named() -> None:
    found = _problems(
        "read-order-lookup", lambda d: _tool_span(d, "executed").update(tool="fs.read")
    )
    assert [rule for rule, _ in found] == ["proposals"]
    assert "answers 'fs.read' where model turn 1 proposed 'orders.lookup'" in found[0][1]


def test_a_moved_step_is_named() -> None:
    found = _problems("read-order-lookup", lambda d: _tool_span(d, "executed").update(step=2))
    assert ("steps", "spans[1]: step 2 after 1 model turn(s)") in found


def test_spans_after_the_event_that_stopped_the_run_are_named() -> None:
    def forge(data: dict[str, Any]) -> None:
        turn = dict(data["spans"][0], id=f"s{len(data['spans']) + 1}", tool_calls=[])
        data["spans"].append(turn)

    found = _problems("provider-error-ends-the-run", forge)
    assert ("ending", "spans[2]: the run stopped here (provider_error) but spans follow") in found


def test_a_tool_output_finding_must_follow_the_call_it_screened() -> None:
    def forge(data: dict[str, Any]) -> None:
        for span in data["spans"]:
            if span["kind"] == "guardrail":
                span["call_id"] = "c2"

    found = _problems("injection-in-tool-output-taints-the-run", forge)
    assert [rule for rule, _ in found] == ["guardrail_calls"]


def test_a_valid_audit_chain_names_no_bad_seq() -> None:
    found = _problems("read-order-lookup", lambda d: d["audit"].update(first_bad_seq=3))
    assert [rule for rule, _ in found] == ["audit_summary"]


def test_a_flagged_answer_put_back_in_place_of_the_replacement_is_named() -> None:
    def forge(data: dict[str, Any]) -> None:
        data["final_answer"] = data["model_text"]

    found = _problems("claims-false-send-after-lookup", forge)
    assert [rule for rule, _ in found] == ["final_answer"]
    assert "The model's answer was withheld" in found[0][1]


def test_a_deleted_claims_span_leaves_the_replaced_answer_unexplained() -> None:
    def forge(data: dict[str, Any]) -> None:
        assert data["spans"][-1]["kind"] == "claims"
        data["spans"].pop()

    found = _problems("claims-false-send-after-lookup", forge)
    assert [rule for rule, _ in found] == ["final_answer"]
