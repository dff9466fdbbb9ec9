"""Store files only their owner can read: created 0600 whatever the umask, side files too."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

PRIVATE_MODE: Final = 0o600
# SQLite's companions of a database file: they hold the same rows as the file itself.
SIDE_SUFFIXES: Final = ("-wal", "-shm", "-journal")


def ensure_private(path: Path) -> None:
    """Create `path` (if missing) and set it and any SQLite side files to mode 0600.

    SQLite gives the -wal and -shm files it creates later the mode of the database file, so
    fixing the database file first keeps them private as well; existing ones are fixed here.
    The mode is set explicitly, so neither a permissive nor a strict umask changes it.

    An existing file is never opened: closing any descriptor of a database file drops every
    POSIX lock this process holds on it, SQLite's included. A connection that lost its lock
    looks gone to other processes, and the last of them to close deletes the WAL this
    connection still writes to: its later commits vanish (the LiteLLM proxy lost approval
    requests that way whenever `proctor approvals approve` ran beside it).
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, PRIVATE_MODE)
    except FileExistsError:
        os.chmod(path, PRIVATE_MODE)
    else:
        try:
            os.fchmod(fd, PRIVATE_MODE)
        finally:
            os.close(fd)
    for suffix in SIDE_SUFFIXES:
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.chmod(side, PRIVATE_MODE)
