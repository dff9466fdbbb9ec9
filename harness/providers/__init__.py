"""Model providers: scripted replay and OpenAI-compatible live endpoints."""

from __future__ import annotations

from harness.providers._base import (
    Message,
    ModelTurn,
    ProposedCall,
    Provider,
    ProviderIdentity,
    ToolSpec,
    Usage,
)
from harness.providers._openai import OpenAIProvider
from harness.providers._replay import ReplayProvider, ScriptStep
from harness.providers._schema import ToolNameCodec, sanitize_tool_schema
from harness.providers._settings import (
    CredentialSourceError,
    ProviderSettings,
    resolve_settings,
)

__all__ = [
    "CredentialSourceError",
    "OpenAIProvider",
    "ProviderSettings",
    "ReplayProvider",
    "ScriptStep",
    "ToolNameCodec",
    "resolve_settings",
    "sanitize_tool_schema",
    "Message",
    "ModelTurn",
    "ProposedCall",
    "Provider",
    "ProviderIdentity",
    "ToolSpec",
    "Usage",
]
