"""How the embedded stores open SQLite: one file per store (durable) or `:memory:` (ephemeral).

Durability of a file store is a named mode:
    fsync  WAL with `synchronous=FULL`: every commit is fsync'd before it returns, so what the
           firewall recorded ahead of a tool survives a power loss. The default.
    os     WAL with `synchronous=NORMAL`: a commit is handed to the OS (the WAL file) but not
           fsync'd. It survives a killed process (kill -9, a crash), NOT a power loss or a
           kernel panic: the last commits may be lost then.
An ephemeral store is `:memory:`: the same SQL, nothing on disk, no fsync, gone on close.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Final, Literal, get_args

Durability = Literal["fsync", "os"]
DURABILITY_MODES: Final[tuple[Durability, ...]] = get_args(Durability)
MEMORY: Final = ":memory:"

_SYNCHRONOUS: Final[dict[str, str]] = {"fsync": "FULL", "os": "NORMAL"}


def check_durability(durability: object) -> Durability:
    """The mode, or ValueError naming the valid ones."""
    for mode in DURABILITY_MODES:
        if durability == mode:
            return mode
    raise ValueError(
        f"unknown durability mode {durability!r}; use one of {', '.join(DURABILITY_MODES)}"
    )


def is_memory(path: Path | str) -> bool:
    return str(path) == MEMORY


def open_connection(
    path: Path | str,
    *,
    durability: Durability,
    busy_timeout: float,
    readonly: bool = False,
) -> sqlite3.Connection:
    """A connection in autocommit mode (the stores issue BEGIN/COMMIT themselves), shared by
    threads behind the store's own lock, with the journal and sync mode the durability asks."""
    if is_memory(path):
        return sqlite3.connect(MEMORY, isolation_level=None, check_same_thread=False)
    if readonly:
        uri = Path(path).resolve().as_uri() + "?mode=ro"
        return sqlite3.connect(
            uri, uri=True, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
    conn = sqlite3.connect(
        path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute("PRAGMA journal_mode = WAL").fetchall()
        conn.execute(f"PRAGMA synchronous = {_SYNCHRONOUS[check_durability(durability)]}")
    except BaseException:
        conn.close()
        raise
    return conn
