"""Model providers: scripted replay and OpenAI-compatible live endpoints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from governance.core import lazy_attributes
from harness.providers._base import (
    Message,
    ModelTurn,
    ProposedCall,
    Provider,
    ProviderIdentity,
    ToolSpec,
    Usage,
)
from harness.providers._replay import ReplayProvider, ScriptStep
from harness.providers._schema import ToolNameCodec, sanitize_tool_schema

if TYPE_CHECKING:
    from harness.providers._openai import OpenAIProvider
    from harness.providers._settings import (
        CredentialSourceError,
        ProviderSettings,
        resolve_settings,
    )

# The openai SDK costs ~0.4 s to import and the credential sources read .env files: only a live
# run pays for them, never a replay or `proctor check` (which reach this package for scripts).
_LAZY = {
    "OpenAIProvider": "harness.providers._openai",
    "CredentialSourceError": "harness.providers._settings",
    "ProviderSettings": "harness.providers._settings",
    "resolve_settings": "harness.providers._settings",
}


__getattr__ = lazy_attributes(globals(), _LAZY)  # later look-ups skip the hook



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
