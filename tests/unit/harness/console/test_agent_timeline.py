"""How the Agent page words each event: every call event its own label and badge, decisions
and rule ids in plain text, long values cut, audit-only noise left out."""

from __future__ import annotations

from typing import Any

import pytest

from harness.console._agent_timeline import MAX_FACT_CHARS, describe, transcript

# The firewall's call lifecycle and review events (governance/_firewall.py), but the policy
# decisions, which are worded from their effect.
CALL_EVENTS = (
    "tool.requested", "call.rejected", "budget.denied", "approval.required",
    "approval.unavailable", "execution.started", "execution.completed", "execution.failed",
    "approval.approved", "approval.rejected", "approval.edit_refused", "approval.refused",
    "approval.revoked", "approval.consumed", "approval.cancelled", "approval.expired",
)  # fmt: skip


def _event(kind: str, name: str, data: dict[str, Any], **rest: Any) -> dict[str, Any]:
    return {"seq": 1, "hub_id": 1, "kind": kind, "name": name, "call_id": "c1",
            "tool": "email.send", "data": data, **rest}  # fmt: skip


@pytest.mark.parametrize("name", CALL_EVENTS)
def test_every_call_event_has_its_own_words_and_a_badge(name: str) -> None:
    shown = describe(_event("call", name, {}))
    assert shown["label"] != name and shown["badge"]
    assert (shown["tool"], shown["call_id"]) == ("email.send", "c1")


@pytest.mark.parametrize(
    ("effect", "label", "badge"),
    [("allow", "policy: allowed", "allow"), ("require_approval", "policy: needs approval", "held"),
     ("block", "policy: blocked", "blocked")],
)  # fmt: skip
def test_a_policy_decision_is_worded_from_its_effect_with_its_rule_ids(
    effect: str, label: str, badge: str
) -> None:
    data = {"effect": effect, "rule_ids": ["r-1", "r-2"], "policy_digest": "sha256:ab"}
    shown = describe(_event("call", "policy.decided", data))
    assert (shown["label"], shown["badge"]) == (label, badge)
    assert shown["facts"] == [["rule_ids", "r-1, r-2"]]  # the digest is for the audit log


def test_an_unknown_effect_is_shown_as_it_is_not_as_allowed() -> None:
    shown = describe(_event("call", "policy.decided", {"effect": "maybe"}))
    assert shown["label"] == "policy: maybe" and shown["badge"] == "muted"


def test_a_decision_names_who_decided_and_their_comment() -> None:
    data = {"approval_id": "apr-1", "status": "rejected", "decided_by": "bob",
            "comment": "wrong recipient"}  # fmt: skip
    shown = describe(_event("status", "decided", data, call_id=None, tool=None))
    assert shown["label"] == "decision: rejected by bob" and shown["badge"] == "rejected"
    assert ["comment", "wrong recipient"] in shown["facts"] and shown["tool"] == ""


def test_a_model_turn_carries_its_text_and_the_calls_it_proposed() -> None:
    data = {"text": "Sending it.", "tool_calls": [{"id": "x", "name": "email.send",
                                                   "arguments": '{"to": "a@b"}'}]}  # fmt: skip
    shown = describe(_event("model", "model.turn", data, call_id=None, tool=None))
    assert shown["text"] == "Sending it." and shown["calls"] == [["email.send", '{"to": "a@b"}']]
    assert shown["facts"] == []


def test_a_long_value_is_cut_and_structured_values_are_json() -> None:
    data = {"arguments": {"body": "x" * (MAX_FACT_CHARS * 2)}}
    (fact,) = describe(_event("call", "tool.requested", data))["facts"]
    assert fact[0] == "arguments" and len(fact[1]) == MAX_FACT_CHARS
    assert fact[1].startswith('{"body": "xxx') and fact[1].endswith("…")


def test_the_transcript_keeps_roles_tool_calls_and_non_text_content() -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"function": {"name": "fs.read", "arguments": '{"path": "a"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text"}]},
    ]  # fmt: skip
    shown = transcript(messages)
    assert [m["role"] for m in shown] == ["user", "assistant", "tool"]
    assert shown[1]["text"] == "" and shown[1]["calls"] == [["fs.read", '{"path": "a"}']]
    assert shown[2]["tool_call_id"] == "call_1" and shown[2]["text"] == '[{"type": "text"}]'
