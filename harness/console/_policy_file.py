"""The policy file on disk, for the console's editor: its bytes and digest, a lock every
console's save takes, and an all-or-nothing replace that keeps the file's mode.

The lock is `flock` on a lock file beside the policy (`.<name>.lock`), never the policy itself:
a replace gives the policy a new inode, so a lock on the old one would protect nothing. The
lock file is left in place: deleting it would let two savers lock two different files.
flock conflicts between two opens of one file even in one process, so threads and processes
are serialised alike.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from governance import PolicyError
from governance.config import read_capped


def file_digest(raw: bytes) -> str:
    """The digest an editor keeps to detect a lost update: of the bytes, comments included."""
    return f"sha256:{hashlib.sha256(raw).hexdigest()}"


def read_bytes(path: Path) -> bytes:
    """The file's bytes (capped as every policy read is). FileNotFoundError when it is gone,
    PolicyError when it cannot be read (a directory now, no permission, too large)."""
    try:
        return read_capped(path, PolicyError, subject="policy")
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise PolicyError(path, None, f"cannot read it ({exc.strerror or exc})") from None


@contextlib.contextmanager
def save_lock(path: Path) -> Iterator[None]:
    """Exclusive, for one save of `path` (its real location), across threads and processes."""
    lock_path = path.parent / f".{path.name}.lock"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def replace_file(path: Path, data: bytes, *, unchanged: Callable[[], bool]) -> None:
    """Write `data` to a temporary file beside `path` with `path`'s mode (and owner, where
    allowed), fsync it, then rename it over `path` and fsync the directory. `unchanged` is
    asked just before the rename: False (someone edited the file meanwhile) abandons it with
    FileChangedError. Any failure leaves `path` as it was and no temporary file behind."""
    info = os.stat(path)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        try:
            os.fchmod(fd, stat.S_IMODE(info.st_mode))
            if (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
                with contextlib.suppress(PermissionError):
                    os.fchown(fd, info.st_uid, info.st_gid)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        if not unchanged():
            raise FileChangedError(path)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable; a filesystem that cannot fsync a directory is let be."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class FileChangedError(Exception):
    """The file changed on disk between the digest check and the rename."""
