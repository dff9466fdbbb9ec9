"""Proctor inside a LiteLLM proxy: a guardrail that sends every MCP tool call LiteLLM brokers
through the firewall before LiteLLM executes it, and withholds tool calls in model responses
that policy does not allow.

Load it from the proxy's config (`guardrail: governance.litellm.ProctorGuardrail`). Only
`ProctorGuardrail` imports LiteLLM, on first use; the settings and the governor do not.
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
