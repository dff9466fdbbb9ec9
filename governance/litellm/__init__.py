"""Proctor inside a LiteLLM proxy: a guardrail that sends every MCP tool call LiteLLM brokers
through the firewall before LiteLLM executes it, and withholds tool calls in model responses
that policy does not allow.

Load it from the proxy's config (`guardrail: governance.litellm.ProctorGuardrail`, modes
`pre_mcp_call` and `post_call`, `default_on: true`). Only `ProctorGuardrail` imports LiteLLM,
on first use; the settings and the governor do not.

What it guarantees, and what it cannot:
- Proctor decides, LiteLLM executes. The firewall's whole path runs in the pre-MCP-call hook
  (schema, policy, budgets, approvals) and the write-ahead record (`tool.requested` ...
  `execution.started`) is committed before the hook lets LiteLLM run the tool, with exactly
  the arguments judged. LiteLLM then runs it: a LiteLLM route that skips its own hook skips
  Proctor too. The tests pin the hook on `/mcp` and `/mcp-rest/tools/call` (1.110.x). No
  key or team metadata (`disable_global_guardrails`, `opted_out_global_guardrails`) switches
  it off, for MCP calls or (with `post_call`) model responses; a mode list without
  `pre_mcp_call`, a tag-based mode, `run_in_parallel: true` or `scan_raw_request: true`
  stops the proxy from starting (LiteLLM would skip the decision or drop the judged
  arguments). Arguments that are not a JSON object are refused; so is a call whose judged
  arguments LiteLLM cannot express (`{}`: it reads an empty override as "unchanged").
- The outcome is recorded from LiteLLM's post-MCP-call hook (`execution.completed` with the
  output's digest, or `execution.failed`); when LiteLLM reports nothing within
  `proctor_outcome_timeout` it is recorded as unknown and its budget slot stays counted.
- What LiteLLM returns to the client is LiteLLM's: Proctor's output screening (secrets,
  injection findings) lands in the audit record, not in the response.
- A held call answers "waiting for approval (apr-N), nothing was executed". After
  `proctor approvals approve apr-N`, the same call sent again (same tool, same arguments as
  judged, same LiteLLM key) runs once; a different key or other arguments never match.
- Who acts comes from LiteLLM's authenticated key; the run comes from the client's
  `x-proctor-run` header (else one run per request), so per-run budgets are as honest as the
  client. Several proxy replicas must share one store (`proctor_store_url`/PROCTOR_STORE_URL),
  or each keeps budgets, approvals and audit of its own.
- Tool calls in model responses are judged by policy alone (budgets are charged where a
  tool runs, approvals cannot be asked for here): only `allow` stays in the response. This
  covers chat completions (`tool_calls` and the legacy `function_call`), `/v1/responses`
  (`function_call`, `custom_tool_call`; other client-run call items are withheld) and
  `/v1/messages` (`tool_use`; other call-like blocks withheld), streamed or not. A stream
  is held back from its first tool-call piece to its end, then released without the
  withheld calls. A call-like thing in any other shape withholds the whole response.
- When the store is down, clients get HTTP 503 "Proctor's stores are unavailable; nothing
  was executed" with an incident id; the error itself goes to the server log only, with
  the store's password scrubbed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from governance.core._lazy import lazy_attributes
from governance.litellm._governor import BrokeredCall, GoAhead, Refused, ToolCallGovernor
from governance.litellm._settings import GuardrailSettings, settings_from

if TYPE_CHECKING:
    from governance.litellm._guardrail import ProctorGuardrail

__getattr__ = lazy_attributes(globals(), {"ProctorGuardrail": "governance.litellm._guardrail"})

__all__ = [
    "BrokeredCall",
    "GoAhead",
    "GuardrailSettings",
    "ProctorGuardrail",
    "Refused",
    "ToolCallGovernor",
    "settings_from",
]
