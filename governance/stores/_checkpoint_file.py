"""Checkpoint files on disk: written atomically and privately, read with a bounded size.

A write goes to a temporary file in the same directory (mode set explicitly, whatever the
umask), is fsynced, then renamed over the target and the directory fsynced: a reader sees the
old checkpoint or the new one, never half of one, even if the writer is killed mid-write.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Final

from governance.core._errors import GovernanceError

MAX_CHECKPOINT_BYTES: Final = 64 * 1024 * 1024  # ~300k runs; refuse anything larger unread


class CheckpointError(GovernanceError):
    """A checkpoint cannot be made or cannot be trusted; the message says which and why."""


class CheckpointFileError(CheckpointError):
    """A checkpoint file cannot be read or written; the message names the file."""


def write_atomic(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Replace `path` with `data` in one rename; OSError if anything fails (nothing replaced)."""
    directory = path.parent if str(path.parent) else Path(".")
    tmp = directory / f".{path.name}.tmp-{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # not every filesystem lets a directory be fsynced
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def read_bounded(path: Path) -> bytes:
    """The file's bytes, or CheckpointFileError naming it (missing, unreadable, too large)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CHECKPOINT_BYTES + 1)
    except OSError as exc:
        raise CheckpointFileError(f"cannot read checkpoint {path}: {exc.strerror or exc}") from exc
    if len(data) > MAX_CHECKPOINT_BYTES:
        raise CheckpointFileError(
            f"checkpoint {path} is larger than {MAX_CHECKPOINT_BYTES} bytes; not a checkpoint"
        )
    return data
