"""Tools in process: the local-tool decorator and source, the registry, and the built-in
demo tools confined to one workspace.
"""

from __future__ import annotations

from governance.tools._business import business_tools
from governance.tools._fs import SEED_FILES, Sandbox, fs_tools
from governance.tools._http_fetch import HttpFetcher
from governance.tools._local import LocalTool, LocalToolSource, ToolExecutionError, local_tool
from governance.tools._readonly_sql import run_read_only_query
from governance.tools._registry import ToolRegistry
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
    "HttpFetcher",
    "LocalTool",
    "LocalToolSource",
    "SEED_FILES",
    "Sandbox",
    "ToolExecutionError",
    "ToolRegistry",
    "Workspace",
    "builtin_registry",
    "builtin_tools",
    "business_tools",
    "database_dump",
    "file_tree",
    "fs_tools",
    "local_tool",
    "orders",
    "outbox_rows",
    "refund_drafts",
    "run_read_only_query",
    "tickets",
]
