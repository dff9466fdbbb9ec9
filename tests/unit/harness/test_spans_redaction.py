"""Spans and traces redact every free-text field on construction, idempotently; the records a
resume still has to execute keep their raw arguments."""

from __future__ import annotations

import json

from harness._spans import LoopSpan, ModelTurnSpan, ToolCallSpan
from harness._trace import Trace
from harness.providers._base import ProposedCall
from tests.fake_secrets import AWS, GITHUB, OPENAI, STAGING_KEY, leaked
from tests.trace_factory import make_trace


def _turn() -> ModelTurnSpan:
    raw = json.dumps({"path": "reports/k.md", "content": f"gh {GITHUB}", "api_key": "hunter2"})
    return ModelTurnSpan(
        id="s1",
        step=1,
        text=f"using {OPENAI}",
        tool_calls=[
            ProposedCall(id="p1", name="fs.write", arguments=raw),
            ProposedCall(id="p2", name="fs.read", arguments=f'{{"path": "{AWS}"'),
        ],
        usage=None,
        finish_reason="tool_calls",
    )


def test_a_model_turn_masks_its_text_and_every_proposed_calls_arguments() -> None:
    dumped = _turn().model_dump_json()
    assert leaked(dumped) == [] and "hunter2" not in dumped
    first = json.loads(_turn().tool_calls[0].arguments)
    assert first["path"] == "reports/k.md"  # still JSON, only the secrets masked


def test_a_record_outside_a_span_keeps_its_raw_arguments_for_the_call_still_to_run() -> None:
    record = ProposedCall(id="p1", name="fs.write", arguments=f'{{"content": "{GITHUB}"}}')
    assert GITHUB in record.arguments


def test_tool_call_errors_arguments_and_loop_details_are_masked() -> None:
    span = ToolCallSpan(
        id="s2", step=1, call_id="c1", provider_call_id="p1", tool="fs.read", known_tool=True,
        arguments={"token": "hunter2", "path": f"notes/{AWS}"}, effect="allow", rule_ids=[],
        reason="not_found", outcome="failed", error=f"no such file: {STAGING_KEY}",
    )  # fmt: skip
    loop = LoopSpan(id="s3", step=1, event="provider_error", detail=f"401: bad key {OPENAI}")
    dumped = span.model_dump_json() + loop.model_dump_json()
    assert leaked(dumped) == [] and "hunter2" not in dumped


def test_redaction_is_idempotent_so_a_trace_read_back_has_the_same_bytes() -> None:
    turn = _turn()
    again = ModelTurnSpan.model_validate_json(turn.model_dump_json())
    assert again.model_dump_json() == turn.model_dump_json()


def test_a_trace_masks_its_answer_and_model_text_and_reads_back_to_the_same_digest() -> None:
    trace = make_trace([_turn()], answer=f"The key is {STAGING_KEY}")
    assert leaked(trace.canonical().decode()) == []
    again = Trace.model_validate_json(trace.canonical())
    assert again.canonical() == trace.canonical() and again.digest == trace.digest
