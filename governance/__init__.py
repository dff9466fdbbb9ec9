"""Proctor's governance layer: one firewall between an agent and every tool."""

from __future__ import annotations

from governance._canonical import canonical_json, digest, keyed_digest
from governance._clock import Clock, ManualClock, SystemClock
from governance._contracts import (
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
from governance._errors import (
    AuditWriteError,
    ConfigError,
    GovernanceError,
    PolicyError,
    RegistryError,
    ToolInputError,
)
from governance._registry import ToolRegistry

__all__ = [
    "ActionType",
    "AuditWriteError",
    "Clock",
    "ConfigError",
    "Decision",
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
    "ToolRegistry",
    "ToolResult",
    "ToolSource",
    "canonical_json",
    "digest",
    "effective_impact",
    "keyed_digest",
]
