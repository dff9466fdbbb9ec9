"""Proctor's governance layer: one firewall between an agent and every tool."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from governance._approval_flow import EditRefused
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
    from governance._arguments import (
        ArgumentRefused,
        PreparedArguments,
        prepare_arguments,
    )
    from governance._audit import AuditEvent, AuditLog
    from governance._audit_chain import ChainVerdict
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
    from governance._canonical import (
        canonical_json,
        digest,
        keyed_digest,
    )
    from governance._clock import (
        Clock,
        ManualClock,
        SystemClock,
    )
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
    from governance._firewall import (
        Firewall,
        LifecycleEvent,
        StaticPolicy,
    )
    from governance._gateway import (
        Gateway,
        McpSourceView,
    )
    from governance._local_tools import (
        LocalTool,
        LocalToolSource,
        ToolExecutionError,
        local_tool,
    )
    from governance._mcp_config import (
        McpConfig,
        McpConfigError,
        load_mcp_config,
    )
    from governance._mcp_pins import (
        McpLockError,
        PinSet,
        load_pins,
        locked_sources,
        write_pins,
    )
    from governance._mcp_server import build_mcp_server
    from governance._mcp_source import (
        McpToolSource,
        open_mcp_sources,
    )
    from governance._mcp_text import neutralise_description
    from governance._paths import (
        PathRefused,
        canonical_path,
    )
    from governance._policy_compile import Policy
    from governance._policy_eval import (
        Explanation,
        evaluate,
        explain,
    )
    from governance._policy_load import (
        PolicyFile,
        load_policy,
        parse_policy,
    )
    from governance._policy_model import policy_json_schema
    from governance._redaction import (
        REDACTED,
        redact,
    )
    from governance._registry import ToolRegistry
    from governance._schemas import (
        SchemaRefused,
        local_validator,
    )
    from governance._sqlite import Durability
    from governance._stores import (
        ApprovalBackend,
        AuditBackend,
        BudgetBackend,
        StoreSpec,
        StoreUrlError,
        parse_store_url,
    )

# Each name loads its module on first use (PEP 562), so `import governance` and
# `from governance import ConfigError` cost only what they touch: the CLI's cold paths
# (`proctor --help`, `check`, `policy ...`) never pay for the stores, the firewall or the MCP SDK.
_EXPORTS = {
    "ApprovalConflict": "governance._approvals",
    "ApprovalError": "governance._approvals",
    "ApprovalNotFound": "governance._approvals",
    "ApprovalRequest": "governance._approvals",
    "ApprovalStatus": "governance._approvals",
    "ApprovalStore": "governance._approvals",
    "ApprovalStoreError": "governance._approvals",
    "SelfApprovalError": "governance._approvals",
    "ArgumentRefused": "governance._arguments",
    "PreparedArguments": "governance._arguments",
    "prepare_arguments": "governance._arguments",
    "AuditEvent": "governance._audit",
    "AuditLog": "governance._audit",
    "ChainVerdict": "governance._audit_chain",
    "Budget": "governance._budgets",
    "BudgetDenial": "governance._budgets",
    "BudgetReservation": "governance._budgets",
    "BudgetReset": "governance._budgets",
    "BudgetResetRefused": "governance._budgets",
    "BudgetStatus": "governance._budgets",
    "BudgetStore": "governance._budgets",
    "BudgetStoreError": "governance._budgets",
    "canonical_json": "governance._canonical",
    "digest": "governance._canonical",
    "keyed_digest": "governance._canonical",
    "Clock": "governance._clock",
    "ManualClock": "governance._clock",
    "SystemClock": "governance._clock",
    "ActionType": "governance._contracts",
    "Decision": "governance._contracts",
    "Effect": "governance._contracts",
    "Impact": "governance._contracts",
    "Outcome": "governance._contracts",
    "PolicyContext": "governance._contracts",
    "Principal": "governance._contracts",
    "Risk": "governance._contracts",
    "RunUsage": "governance._contracts",
    "ToolCall": "governance._contracts",
    "ToolDescriptor": "governance._contracts",
    "ToolResult": "governance._contracts",
    "ToolSource": "governance._contracts",
    "effective_impact": "governance._contracts",
    "AuditWriteError": "governance._errors",
    "ConfigError": "governance._errors",
    "GovernanceError": "governance._errors",
    "PolicyError": "governance._errors",
    "RegistryError": "governance._errors",
    "ToolInputError": "governance._errors",
    "EditRefused": "governance._approval_flow",
    "Firewall": "governance._firewall",
    "LifecycleEvent": "governance._firewall",
    "StaticPolicy": "governance._firewall",
    "Gateway": "governance._gateway",
    "McpSourceView": "governance._gateway",
    "LocalTool": "governance._local_tools",
    "LocalToolSource": "governance._local_tools",
    "ToolExecutionError": "governance._local_tools",
    "local_tool": "governance._local_tools",
    "McpConfig": "governance._mcp_config",
    "McpConfigError": "governance._mcp_config",
    "load_mcp_config": "governance._mcp_config",
    "McpLockError": "governance._mcp_pins",
    "PinSet": "governance._mcp_pins",
    "load_pins": "governance._mcp_pins",
    "locked_sources": "governance._mcp_pins",
    "write_pins": "governance._mcp_pins",
    "neutralise_description": "governance._mcp_text",
    "PathRefused": "governance._paths",
    "canonical_path": "governance._paths",
    "Explanation": "governance._policy_eval",
    "Policy": "governance._policy_compile",
    "evaluate": "governance._policy_eval",
    "explain": "governance._policy_eval",
    "PolicyFile": "governance._policy_load",
    "load_policy": "governance._policy_load",
    "parse_policy": "governance._policy_load",
    "policy_json_schema": "governance._policy_model",
    "REDACTED": "governance._redaction",
    "redact": "governance._redaction",
    "ToolRegistry": "governance._registry",
    "SchemaRefused": "governance._schemas",
    "local_validator": "governance._schemas",
    "Durability": "governance._sqlite",
    "ApprovalBackend": "governance._stores",
    "AuditBackend": "governance._stores",
    "BudgetBackend": "governance._stores",
    "StoreSpec": "governance._stores",
    "StoreUrlError": "governance._stores",
    "parse_store_url": "governance._stores",
    "McpToolSource": "governance._mcp_source",
    "open_mcp_sources": "governance._mcp_source",
    "build_mcp_server": "governance._mcp_server",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'governance' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "ApprovalBackend",
    "AuditBackend",
    "BudgetBackend",
    "Durability",
    "StoreSpec",
    "StoreUrlError",
    "parse_store_url",
    "McpConfig",
    "McpConfigError",
    "McpLockError",
    "McpToolSource",
    "PinSet",
    "build_mcp_server",
    "load_mcp_config",
    "load_pins",
    "locked_sources",
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
]
