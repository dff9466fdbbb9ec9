"""Proctor's governance layer: one firewall between an agent and every tool."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from governance._approvals import (
    ApprovalConflict,
    ApprovalError,
    ApprovalNotFound,
    ApprovalRequest,
    ApprovalStatus,
    ApprovalStore,
    ApprovalStoreError,
    SelfApprovalError,
)
from governance._arguments import ArgumentRefused, PreparedArguments, prepare_arguments
from governance._audit import AuditEvent, AuditLog, ChainVerdict
from governance._budgets import (
    Budget,
    BudgetDenial,
    BudgetReservation,
    BudgetReset,
    BudgetResetRefused,
    BudgetStatus,
    BudgetStore,
    BudgetStoreError,
)
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
from governance._firewall import EditRefused, Firewall, LifecycleEvent, StaticPolicy
from governance._gateway import Gateway, McpSourceView
from governance._local_tools import LocalTool, LocalToolSource, ToolExecutionError, local_tool
from governance._mcp_config import McpConfig, McpConfigError, load_mcp_config
from governance._mcp_pins import McpLockError, PinSet, load_pins, write_pins
from governance._mcp_text import neutralise_description
from governance._paths import PathRefused, canonical_path
from governance._policy_eval import Explanation, Policy, evaluate, explain
from governance._policy_load import PolicyFile, load_policy, parse_policy
from governance._policy_model import policy_json_schema
from governance._redaction import REDACTED, redact
from governance._registry import ToolRegistry
from governance._schemas import SchemaRefused, local_validator
from governance._sqlite import Durability
from governance._stores import (
    ApprovalBackend,
    AuditBackend,
    BudgetBackend,
    StoreSpec,
    StoreUrlError,
    parse_store_url,
)

if TYPE_CHECKING:
    from governance._mcp_server import build_mcp_server
    from governance._mcp_source import McpToolSource, open_mcp_sources

# The MCP SDK costs ~0.5 s to import: these load it on first use, not on `import governance`.
_LAZY = {
    "McpToolSource": "governance._mcp_source",
    "open_mcp_sources": "governance._mcp_source",
    "build_mcp_server": "governance._mcp_server",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'governance' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "McpConfig",
    "McpConfigError",
    "McpLockError",
    "McpToolSource",
    "PinSet",
    "build_mcp_server",
    "load_mcp_config",
    "load_pins",
    "neutralise_description",
    "open_mcp_sources",
    "write_pins",
    "REDACTED",
    "ApprovalConflict",
    "ApprovalError",
    "ApprovalNotFound",
    "ApprovalRequest",
    "ApprovalStatus",
    "ApprovalStore",
    "ApprovalStoreError",
    "Budget",
    "BudgetDenial",
    "BudgetReservation",
    "BudgetReset",
    "BudgetResetRefused",
    "BudgetStatus",
    "BudgetStore",
    "BudgetStoreError",
    "EditRefused",
    "Gateway",
    "SelfApprovalError",
    "ActionType",
    "AuditEvent",
    "AuditLog",
    "ChainVerdict",
    "Explanation",
    "Firewall",
    "LifecycleEvent",
    "LocalTool",
    "LocalToolSource",
    "Policy",
    "PolicyFile",
    "StaticPolicy",
    "ToolExecutionError",
    "evaluate",
    "explain",
    "load_policy",
    "local_tool",
    "parse_policy",
    "policy_json_schema",
    "redact",
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
    "ArgumentRefused",
    "McpSourceView",
    "PathRefused",
    "PreparedArguments",
    "SchemaRefused",
    "canonical_json",
    "canonical_path",
    "digest",
    "local_validator",
    "prepare_arguments",
    "effective_impact",
    "keyed_digest",
    "ApprovalBackend",
    "AuditBackend",
    "BudgetBackend",
    "Durability",
    "StoreSpec",
    "StoreUrlError",
    "parse_store_url",
]
