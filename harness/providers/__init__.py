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

__all__ = [
    "Message",
    "ModelTurn",
    "ProposedCall",
    "Provider",
    "ProviderIdentity",
    "ToolSpec",
    "Usage",
]
