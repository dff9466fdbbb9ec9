"""Proctor's built-in demo tools: real effects (files, rows), confined to one workspace."""

from __future__ import annotations

from governance.tools._business import business_tools
from governance.tools._fs import SEED_FILES, Sandbox, fs_tools
from governance.tools._workspace import (
    Workspace,
    builtin_registry,
    builtin_tools,
    database_dump,
    file_tree,
    orders,
    outbox_rows,
    refund_drafts,
    tickets,
)

__all__ = [
    "SEED_FILES",
    "Sandbox",
    "Workspace",
    "builtin_registry",
    "builtin_tools",
    "business_tools",
    "database_dump",
    "file_tree",
    "fs_tools",
    "orders",
    "outbox_rows",
    "refund_drafts",
    "tickets",
]
