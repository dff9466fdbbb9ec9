"""Proctor's governance layer: one firewall between an agent and every tool."""

from __future__ import annotations

from typing import TYPE_CHECKING

from governance.core._lazy import lazy_attributes

if TYPE_CHECKING:
    from governance._approval_flow import EditRefused
    from governance._call_decision import decide_call
    from governance._firewall import (
        Firewall,
        LifecycleEvent,
        StaticPolicy,
    )
    from governance._gateway import (
        DEFAULT_STATE_DIR,
        Gateway,
        McpSourceView,
    )
    from governance._mcp_server import (
        RESUME_TOOL,
        McpServerError,
        build_mcp_server,
        describe_tools,
        is_loopback,
        serve_http,
        serve_stdio,
    )
    from governance._serving import StartedServer, bind_socket, serving_in_thread
    from governance.arguments._paths import (
        PathRefused,
        canonical_path,
    )
    from governance.arguments._schemas import (
        SchemaRefused,
        local_validator,
    )
    from governance.arguments._snapshot import (
        ArgumentRefused,
        PreparedArguments,
        prepare_arguments,
    )
    from governance.core._canonical import (
        canonical_json,
        digest,
        keyed_digest,
    )
    from governance.core._clock import (
        Clock,
        ManualClock,
        SystemClock,
    )
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
    from governance.mcp._client import (
        McpToolSource,
        open_mcp_sources,
    )
    from governance.mcp._config import (
        McpConfig,
        McpConfigError,
        load_mcp_config,
    )
    from governance.mcp._pins import (
        McpLockError,
        PinSet,
        load_pins,
        locked_sources,
        write_pins,
    )
    from governance.mcp._text import neutralise_description
    from governance.policy._compile import Policy
    from governance.policy._eval import (
        Explanation,
        evaluate,
        explain,
    )
    from governance.policy._load import (
        PolicyFile,
        load_policy,
        parse_policy,
    )
    from governance.policy._model import policy_json_schema
    from governance.screening._redaction import (
        REDACTED,
        redact,
    )
    from governance.stores._approvals import (
        ApprovalConflict,
        ApprovalError,
        ApprovalNotFound,
        ApprovalRequest,
        ApprovalStatus,
        ApprovalStore,
        ApprovalStoreError,
        SelfApprovalError,
    )
    from governance.stores._audit import AuditEvent, AuditLog
    from governance.stores._audit_chain import ChainVerdict
    from governance.stores._backends import (
        ApprovalBackend,
        AuditBackend,
        BudgetBackend,
        StoreSpec,
        StoreUrlError,
        parse_store_url,
    )
    from governance.stores._budgets import (
        Budget,
        BudgetDenial,
        BudgetReservation,
        BudgetReset,
        BudgetResetRefused,
        BudgetStatus,
        BudgetStore,
        BudgetStoreError,
    )
    from governance.stores._sqlite import Durability
    from governance.tools._local import (
        LocalTool,
        LocalToolSource,
        ToolExecutionError,
        local_tool,
    )
    from governance.tools._registry import ToolRegistry

# Each name loads its module on first use (PEP 562), so `import governance` and
# `from governance import ConfigError` cost only what they touch: the CLI's cold paths
# (`proctor --help`, `check`, `policy ...`) never pay for the stores, the firewall or the MCP SDK.
_EXPORTS = {
    "StartedServer": "governance._serving",
    "bind_socket": "governance._serving",
    "serving_in_thread": "governance._serving",
    "RESUME_TOOL": "governance._mcp_server",
    "McpServerError": "governance._mcp_server",
    "describe_tools": "governance._mcp_server",
    "is_loopback": "governance._mcp_server",
    "serve_http": "governance._mcp_server",
    "serve_stdio": "governance._mcp_server",
    "DEFAULT_STATE_DIR": "governance._gateway",
    "ApprovalConflict": "governance.stores._approvals",
    "ApprovalError": "governance.stores._approvals",
    "ApprovalNotFound": "governance.stores._approvals",
    "ApprovalRequest": "governance.stores._approvals",
    "ApprovalStatus": "governance.stores._approvals",
    "ApprovalStore": "governance.stores._approvals",
    "ApprovalStoreError": "governance.stores._approvals",
    "SelfApprovalError": "governance.stores._approvals",
    "ArgumentRefused": "governance.arguments._snapshot",
    "PreparedArguments": "governance.arguments._snapshot",
    "prepare_arguments": "governance.arguments._snapshot",
    "AuditEvent": "governance.stores._audit",
    "AuditLog": "governance.stores._audit",
    "ChainVerdict": "governance.stores._audit_chain",
    "Budget": "governance.stores._budgets",
    "BudgetDenial": "governance.stores._budgets",
    "BudgetReservation": "governance.stores._budgets",
    "BudgetReset": "governance.stores._budgets",
    "BudgetResetRefused": "governance.stores._budgets",
    "BudgetStatus": "governance.stores._budgets",
    "BudgetStore": "governance.stores._budgets",
    "BudgetStoreError": "governance.stores._budgets",
    "canonical_json": "governance.core._canonical",
    "digest": "governance.core._canonical",
    "keyed_digest": "governance.core._canonical",
    "Clock": "governance.core._clock",
    "ManualClock": "governance.core._clock",
    "SystemClock": "governance.core._clock",
    "ActionType": "governance.core._contracts",
    "Decision": "governance.core._contracts",
    "Effect": "governance.core._contracts",
    "Impact": "governance.core._contracts",
    "Outcome": "governance.core._contracts",
    "PolicyContext": "governance.core._contracts",
    "Principal": "governance.core._contracts",
    "Risk": "governance.core._contracts",
    "RunUsage": "governance.core._contracts",
    "ToolCall": "governance.core._contracts",
    "ToolDescriptor": "governance.core._contracts",
    "ToolResult": "governance.core._contracts",
    "ToolSource": "governance.core._contracts",
    "effective_impact": "governance.core._contracts",
    "AddressUnavailable": "governance.core._errors",
    "AuditWriteError": "governance.core._errors",
    "ConfigError": "governance.core._errors",
    "ExtraUnavailable": "governance.core._errors",
    "GovernanceError": "governance.core._errors",
    "PolicyError": "governance.core._errors",
    "RegistryError": "governance.core._errors",
    "ToolInputError": "governance.core._errors",
    "EditRefused": "governance._approval_flow",
    "decide_call": "governance._call_decision",
    "Firewall": "governance._firewall",
    "LifecycleEvent": "governance._firewall",
    "StaticPolicy": "governance._firewall",
    "Gateway": "governance._gateway",
    "McpSourceView": "governance._gateway",
    "LocalTool": "governance.tools._local",
    "LocalToolSource": "governance.tools._local",
    "ToolExecutionError": "governance.tools._local",
    "local_tool": "governance.tools._local",
    "McpConfig": "governance.mcp._config",
    "McpConfigError": "governance.mcp._config",
    "load_mcp_config": "governance.mcp._config",
    "McpLockError": "governance.mcp._pins",
    "PinSet": "governance.mcp._pins",
    "load_pins": "governance.mcp._pins",
    "locked_sources": "governance.mcp._pins",
    "write_pins": "governance.mcp._pins",
    "neutralise_description": "governance.mcp._text",
    "PathRefused": "governance.arguments._paths",
    "canonical_path": "governance.arguments._paths",
    "Explanation": "governance.policy._eval",
    "Policy": "governance.policy._compile",
    "evaluate": "governance.policy._eval",
    "explain": "governance.policy._eval",
    "PolicyFile": "governance.policy._load",
    "load_policy": "governance.policy._load",
    "parse_policy": "governance.policy._load",
    "policy_json_schema": "governance.policy._model",
    "REDACTED": "governance.screening._redaction",
    "redact": "governance.screening._redaction",
    "ToolRegistry": "governance.tools._registry",
    "SchemaRefused": "governance.arguments._schemas",
    "local_validator": "governance.arguments._schemas",
    "Durability": "governance.stores._sqlite",
    "ApprovalBackend": "governance.stores._backends",
    "AuditBackend": "governance.stores._backends",
    "BudgetBackend": "governance.stores._backends",
    "StoreSpec": "governance.stores._backends",
    "StoreUrlError": "governance.stores._backends",
    "parse_store_url": "governance.stores._backends",
    "McpToolSource": "governance.mcp._client",
    "open_mcp_sources": "governance.mcp._client",
    "build_mcp_server": "governance._mcp_server",
}


__getattr__ = lazy_attributes(globals(), _EXPORTS)  # later look-ups skip the hook


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "StartedServer",
    "bind_socket",
    "serving_in_thread",
    "RESUME_TOOL",
    "McpServerError",
    "describe_tools",
    "is_loopback",
    "serve_http",
    "serve_stdio",
    "DEFAULT_STATE_DIR",
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
    "decide_call",
    "ToolExecutionError",
    "evaluate",
    "explain",
    "load_policy",
    "local_tool",
    "parse_policy",
    "policy_json_schema",
    "redact",
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
