"""An executed call's result text in the trace (what report.html shows): as the model saw it,
redacted whole before it is cut, and never on a call that did not execute."""

from __future__ import annotations

import json
from typing import Any

from harness._spans import RESULT_SHOWN_CHARS, ToolCallSpan
from harness._trace import Trace
from harness._trace_verify import trace_problems
from harness.reports._html import _result_text
from tests import fake_secrets
from tests.small_suite import REPO

TRACES = REPO / "baselines" / "traces"


def _span(**fields: Any) -> ToolCallSpan:
    base: dict[str, Any] = {
        "id": "s2", "step": 1, "kind": "tool_call", "call_id": "c1", "provider_call_id": "p1",
        "tool": "fs.read", "known_tool": True, "arguments": {"path": "a.txt"}, "effect": "allow",
        "rule_ids": ["fs-read"], "reason": "allowed", "outcome": "executed",
        "result_digest": "sha256:" + "0" * 64, "result_chars": 10,
    }  # fmt: skip
    return ToolCallSpan.model_validate({**base, **fields})


def test_a_secret_in_a_result_is_masked_in_the_trace() -> None:
    span = _span(result=f"token {fake_secrets.GITHUB} and key {fake_secrets.OPENAI}\n")
    assert span.result is not None
    assert fake_secrets.leaked(span.result) == []
    assert "[REDACTED" in span.result


def test_a_secret_straddling_the_cut_is_masked_before_it_is_cut() -> None:
    secret = fake_secrets.OPENAI
    text = "x " * ((RESULT_SHOWN_CHARS - len(secret) // 2) // 2) + secret + " tail" * 50
    assert text.index(secret) < RESULT_SHOWN_CHARS < text.index(secret) + len(secret)
    shown = _span(result=text).result
    assert shown is not None and shown.endswith(" [...]")
    assert len(shown) <= RESULT_SHOWN_CHARS + len(" [...]")
    # no prefix of the secret long enough to mean anything survives the cut
    assert secret[:12] not in shown


def test_a_short_result_is_kept_whole() -> None:
    assert _span(result="alpha\nbeta").result == "alpha\nbeta"


def test_every_executed_call_of_the_shipped_suite_keeps_its_result_and_no_other_does() -> None:
    executed = 0
    for path in sorted(TRACES.glob("*.json")):
        data = json.loads(path.read_text("utf-8"))
        for span in data["spans"]:
            if span["kind"] != "tool_call":
                continue
            if span["outcome"] == "executed":
                executed += 1
                assert isinstance(span["result"], str), (path.name, span["id"])
            else:
                assert span.get("result") is None, (path.name, span["id"])
        assert fake_secrets.leaked(path.read_text("utf-8")) == [], path.name
    assert executed > 50


def test_result_text_on_a_blocked_call_is_named_by_the_verifier() -> None:
    data = json.loads((TRACES / "block-delete-by-rule.json").read_text("utf-8"))
    span = next(s for s in data["spans"] if s["kind"] == "tool_call" and s["outcome"] == "blocked")
    span["result"] = "deleted notes/todo.txt"
    problems = [str(p) for p in trace_problems(Trace.model_validate({**data, "run_id": "r"}))]
    assert any("a blocked call has result text" in p for p in problems), problems


def test_report_html_folds_the_result_text_and_escapes_it() -> None:
    html = _result_text(_span(result="<script>alert(1)</script></details><b>x</b>"))
    assert html.startswith('<details class="result"><summary>')
    assert "<script>" not in html and "</details><b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/details&gt;" in html
    assert _result_text(_span(outcome="blocked", result=None, result_digest=None)) == ""


def test_a_live_key_cut_in_half_by_the_shown_length_leaves_no_part_of_it() -> None:
    from harness._scenario_runner import ProviderChoice, _without_own_key
    from harness.providers._settings import ProviderSettings

    key = "correct-horse-battery-staple-orbit-lantern-quietly"  # no shape the redactor knows
    data = json.loads((TRACES / "read-order-lookup.json").read_text("utf-8"))
    span = next(s for s in data["spans"] if s["kind"] == "tool_call")
    span["result"] = "a" * (RESULT_SHOWN_CHARS - 19) + " " + key + " tail" * 20
    trace = Trace.model_validate({**data, "run_id": "r"})
    stored = trace.spans[int(span["id"][1:]) - 1]
    assert isinstance(stored, ToolCallSpan) and stored.result is not None
    assert key[:12] in stored.result  # the cut kept the key's first half
    settings = ProviderSettings(base_url="http://127.0.0.1:1/v1", model="m", api_key=key)
    cleaned = _without_own_key(trace, ProviderChoice("openai", settings), None)
    text = cleaned.model_dump_json()
    assert key[:6] not in text
    shown = next(s for s in cleaned.spans if isinstance(s, ToolCallSpan)).result
    assert shown is not None and shown.endswith("[REDACTED:api_key] [...]")
    assert len(shown) <= RESULT_SHOWN_CHARS + len(" [...]")
