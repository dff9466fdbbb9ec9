"""A demo workspace: the `files/` sandbox and `business.sqlite`, seeded once, and its tools."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from governance.tools._business import TABLES, business_tools, create_database, table_rows
from governance.tools._fs import Sandbox, fs_tools, seed_files
from governance.tools._http_fetch import HttpFetcher
from governance.tools._http_tool import http_tools
from governance.tools._kb import kb_tools
from governance.tools._local import LocalToolSource
from governance.tools._registry import ToolRegistry


@dataclass(frozen=True, slots=True)
class Workspace:
    """Where the built-in tools keep their state. `ensure()` creates and seeds what is missing."""

    root: Path

    @property
    def files_dir(self) -> Path:
        return self.root / "files"

    @property
    def db_path(self) -> Path:
        return self.root / "business.sqlite"

    def ensure(self) -> Workspace:
        """Create `files/` and the database if missing, each seeded atomically; keep existing."""
        self.root.mkdir(parents=True, exist_ok=True)
        if not self.files_dir.exists():
            staging = Path(tempfile.mkdtemp(prefix=".files-", dir=self.root))
            try:
                seed_files(staging)
                staging.chmod(0o755)
                os.rename(staging, self.files_dir)
            except OSError:
                shutil.rmtree(staging, ignore_errors=True)
                if not self.files_dir.is_dir():  # not a lost race with another creator
                    raise
        if not self.db_path.exists():
            create_database(self.db_path)
        return self


def builtin_tools(workspace: Path | str, *, http: HttpFetcher | None = None) -> LocalToolSource:
    """The demo tools (fs, kb, orders, refunds, tickets, email, db) over a seeded workspace, and
    `http.get` over `http` (by default: public addresses only, system DNS)."""
    return _tools_over(Workspace(Path(workspace)).ensure(), http)


def _tools_over(ws: Workspace, http: HttpFetcher | None = None) -> LocalToolSource:
    sandbox = Sandbox(ws.files_dir)
    return LocalToolSource(
        [*fs_tools(sandbox), *kb_tools(sandbox), *business_tools(ws.db_path), *http_tools(http)]
    )


def builtin_registry() -> ToolRegistry:
    """A fresh registry of the built-in tools, for their descriptors alone (contract checks,
    `policy explain`).

    Descriptors do not depend on the workspace, so none is seeded (no files, no database):
    the tools are bound to an empty scratch directory that is removed at once, so a call
    through this registry fails instead of touching real state.
    """
    with tempfile.TemporaryDirectory(prefix="proctor-registry-") as scratch:
        ws = Workspace(Path(scratch))
        ws.files_dir.mkdir()
        return ToolRegistry([_tools_over(ws)])


def _workspace(workspace: Workspace | Path | str) -> Workspace:
    return workspace if isinstance(workspace, Workspace) else Workspace(Path(workspace))


def orders(workspace: Workspace | Path | str) -> list[dict[str, Any]]:
    return table_rows(_workspace(workspace).db_path, "orders")


def refund_drafts(workspace: Workspace | Path | str) -> list[dict[str, Any]]:
    return table_rows(_workspace(workspace).db_path, "refund_drafts")


def tickets(workspace: Workspace | Path | str) -> list[dict[str, Any]]:
    return table_rows(_workspace(workspace).db_path, "tickets")


def outbox_rows(workspace: Workspace | Path | str) -> list[dict[str, Any]]:
    """Every email the agent "sent": they are only ever queued here."""
    return table_rows(_workspace(workspace).db_path, "outbox")


def database_dump(workspace: Workspace | Path | str) -> dict[str, list[dict[str, Any]]]:
    """All tables, all rows: what a determinism or did-it-run check compares."""
    db_path = _workspace(workspace).db_path
    return {table: table_rows(db_path, table) for table in TABLES}


def file_tree(workspace: Workspace | Path | str) -> dict[str, str]:
    """`relpath -> content` of every regular file under `files/` (links reported, not followed)."""
    root = _workspace(workspace).files_dir
    tree: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(Path(dirpath, d))]):
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                tree[rel] = "-> " + os.readlink(path)
            else:
                tree[rel] = path.read_text(encoding="utf-8", errors="replace")
    return dict(sorted(tree.items()))
