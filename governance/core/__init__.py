"""The shapes and helpers every part of governance shares: contracts, errors, canonical
JSON and digests, clocks, person identity, process identity.
"""

from __future__ import annotations

from governance.core._canonical import canonical_json, digest, keyed_digest
from governance.core._clock import Clock, ManualClock, SystemClock
from governance.core._contracts import (
    ActionType,
    Decision,
    Effect,
    Impact,
    Outcome,
    PolicyContext,
    Principal,
    Risk,
    RunUsage,
    ToolCall,
    ToolDescriptor,
    ToolResult,
    ToolSource,
    effective_impact,
)
from governance.core._errors import (
    AddressUnavailable,
    AuditWriteError,
    ConfigError,
    ExtraUnavailable,
    GovernanceError,
    PolicyError,
    RegistryError,
    ToolInputError,
)
from governance.core._lazy import lazy_attributes

__all__ = [
    "lazy_attributes",
    "ActionType",
    "AddressUnavailable",
    "AuditWriteError",
    "Clock",
    "ConfigError",
    "Decision",
    "ExtraUnavailable",
    "Effect",
    "GovernanceError",
    "Impact",
    "ManualClock",
    "Outcome",
    "PolicyContext",
    "PolicyError",
    "Principal",
    "RegistryError",
    "Risk",
    "RunUsage",
    "SystemClock",
    "ToolCall",
    "ToolDescriptor",
    "ToolInputError",
    "ToolResult",
    "ToolSource",
    "canonical_json",
    "digest",
    "effective_impact",
    "keyed_digest",
]
