"""How the Agent page shows a turn's events: one line each, with a badge and the facts that
matter (tool, decision, rule ids, approval id, reviewer), computed once here for both the
server-rendered page and the JSON its script reads, so the two never disagree.

Everything returned is plain text: the template escapes it, the script sets it as textContent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# What a value may show on one line before it is cut (full values stay in the transcript).
MAX_FACT_CHARS = 400
# Digests and counters are for the audit log, not for a person following a turn.
_HIDDEN = frozenset(
    {"arguments_digest", "policy_digest", "registry_digest", "output_digest", "request_digest",
     "tokens_used", "defaults_applied", "canonicalised", "held", "final_answer", "live",
     # The turn's header says whose it is; every call of a turn has the same principal.
     "principal"}
)  # fmt: skip

_CALL_LABELS: dict[str, tuple[str, str]] = {
    # name: (label, badge class)
    "tool.requested": ("requested", "requested"),
    "call.rejected": ("rejected as invalid", "blocked"),
    "budget.denied": ("over budget", "blocked"),
    "approval.required": ("held for approval", "held"),
    "approval.unavailable": ("approval unavailable", "blocked"),
    "approval.approved": ("approved", "approved"),
    "approval.rejected": ("rejected", "rejected"),
    "approval.edit_refused": ("edit refused", "rejected"),
    "approval.refused": ("approval refused", "rejected"),
    "approval.revoked": ("approval revoked", "rejected"),
    "approval.consumed": ("approval used", "muted"),
    "approval.cancelled": ("approval withdrawn", "cancelled"),
    "approval.expired": ("approval expired", "expired"),
    "execution.started": ("executing", "muted"),
    "execution.completed": ("executed", "executed"),
    "execution.failed": ("execution failed", "failed"),
    "guardrail.flagged": ("output flagged", "held"),
}
_EFFECTS = {"allow": "allowed", "require_approval": "needs approval", "block": "blocked"}
_EFFECT_BADGES = {"allow": "allow", "require_approval": "held", "block": "blocked"}
_STATUS_LABELS = {
    "running": "turn running",
    "waiting_approval": "waiting for approval",
    "completed": "turn completed",
    "blocked": "turn ended: blocked",
    "failed": "turn failed",
    "max_steps": "turn ended: step limit",
    "provider_error": "turn ended: model provider failed",
    "input_rejected": "request rejected",
    "cancelled": "turn cancelled",
    "interrupted": "turn interrupted",
}
_STATUS_BADGES = {
    "running": "running",
    "waiting_approval": "held",
    "completed": "completed",
    "input_rejected": "blocked",
    "max_steps": "failed",
    "provider_error": "failed",
    "interrupted": "cancelled",
}
_RUN_BADGES = {"provider.error": "failed", "guardrail.rejected": "blocked",
               "guardrail.flagged": "held", "guardrail.claims_flagged": "held",
               "loop.repeated_call": "held", "call.rejected": "blocked"}  # fmt: skip


def text_of(value: Any) -> str:
    """One line of text for any JSON value, cut at MAX_FACT_CHARS."""
    if isinstance(value, str):
        shown = value
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        shown = ", ".join(value)  # rule ids and the like read best as a plain list
    else:
        shown = json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= MAX_FACT_CHARS else shown[: MAX_FACT_CHARS - 1] + "…"


def status_badge(status: str) -> str:
    return _STATUS_BADGES.get(status, status)


def status_label(status: str) -> str:
    return _STATUS_LABELS.get(status, status)


def describe(event: Mapping[str, Any]) -> dict[str, Any]:
    """The event (SessionEvent.as_json) plus `label`, `badge` and `facts` ([name, text] pairs);
    a model turn also gets `text` and `calls` ([name, arguments] pairs)."""
    kind, name = event["kind"], event["name"]
    data: Mapping[str, Any] = event.get("data") or {}
    label, badge = name, "muted"
    facts = [(k, v) for k, v in data.items() if k not in _HIDDEN and v not in (None, "", [], {})]
    extra: dict[str, Any] = {}
    if kind == "call":
        if name in ("policy.decided", "policy.rechecked"):
            effect = str(data.get("effect", ""))
            verb = "policy" if name == "policy.decided" else "rechecked"
            label = f"{verb}: {_EFFECTS.get(effect, effect)}"
            badge = _EFFECT_BADGES.get(effect, "muted")
            facts = [(k, v) for k, v in facts if k != "effect"]
        else:
            label, badge = _CALL_LABELS.get(name, (name, "muted"))
    elif kind == "status":
        if name == "decided":
            decided = str(data.get("status", ""))
            who = data.get("decided_by")
            label = f"decision: {decided}" + (f" by {who}" if who else "")
            badge = decided
            facts = [(k, v) for k, v in facts if k not in ("status", "decided_by")]
        else:
            label, badge = status_label(name), status_badge(name)
            facts = [(k, v) for k, v in facts if k not in ("status", "termination")]
    elif kind == "model":
        label, badge = "model", "model"
        facts = []
        extra["text"] = data.get("text") or ""
        extra["calls"] = [
            [str(c.get("name", "")), text_of(c.get("arguments", ""))]
            for c in data.get("tool_calls") or []
        ]
    else:
        badge = _RUN_BADGES.get(name, "muted")
        label = name.replace("run.", "run ", 1)
    return {
        "seq": event["seq"],
        "hub_id": event.get("hub_id"),
        "kind": kind,
        "name": name,
        "tool": event.get("tool") or "",
        "call_id": event.get("call_id") or "",
        "label": label,
        "badge": badge,
        "facts": [[k, text_of(v)] for k, v in facts],
        **extra,
    }


def transcript(messages: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The run's messages as the page lists them: role, text, and the tool calls an assistant
    message made ([name, arguments] pairs). The system prompt is kept (it is what the model
    was told) and shown folded by the page."""
    shown = []
    for message in messages:
        functions = [c.get("function") or {} for c in message.get("tool_calls") or []]
        calls = [[str(f.get("name", "")), str(f.get("arguments", ""))] for f in functions]
        content = message.get("content")
        if not isinstance(content, str):
            content = text_of(content) if content else ""
        shown.append(
            {
                "role": str(message.get("role", "")),
                "text": content,
                "calls": calls,
                "tool_call_id": str(message.get("tool_call_id") or ""),
            }
        )
    return shown
