"""Model providers: scripted replay and OpenAI-compatible live endpoints."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
from harness.providers._settings import (
    CredentialSourceError,
    ProviderSettings,
    resolve_settings,
)

if TYPE_CHECKING:
    from harness.providers._openai import OpenAIProvider


def __getattr__(name: str) -> Any:
    # The OpenAI SDK costs a second and tens of MB to import: only a live run loads it.
    if name == "OpenAIProvider":
        from harness.providers._openai import OpenAIProvider

        return OpenAIProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
