"""Untrusted text nested too deep for json to parse never crashes the harness."""

from __future__ import annotations

from harness._loop import _parse_arguments
from harness._spans import redact_arguments_text
from harness.providers._replay import _tool_payload, tool_result_status

TOO_DEEP = "[" * 100_000 + "]" * 100_000


def test_text_nested_too_deep_to_parse_is_refused_or_read_as_text_everywhere_it_is_parsed() -> None:
    # The model's argument text (loop, spans) and the tool messages the replay provider reads:
    # json raises RecursionError there, which is no ValueError.
    assert _parse_arguments(TOO_DEEP) is None  # not one JSON object: a failed call, no crash
    assert redact_arguments_text(TOO_DEEP) == TOO_DEEP
    assert tool_result_status(TOO_DEEP) is None
    assert _tool_payload(TOO_DEEP) == TOO_DEEP
