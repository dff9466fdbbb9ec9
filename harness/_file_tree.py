"""A directory tree held in memory, and put back on disk by rewriting only what differs.

A scenario's workspace is reset before every scenario; most scenarios leave its files as they
found them, so comparing (one read per file) costs less than deleting and copying the tree.
What is compared is all the built-in tools can observe or change: which entries exist, their
type (a symlink or a hard-linked file is never kept), permission bits and bytes.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class FileTree:
    """Directories (relative POSIX paths, parents first) and regular files: path -> (mode,
    bytes). The root directory itself is not described: `restore` keeps its mode."""

    dirs: dict[str, int]
    files: dict[str, tuple[int, bytes]]

    @classmethod
    def read(cls, root: Path) -> FileTree:
        """The tree under `root`; anything but directories and regular files is refused."""
        dirs: dict[str, int] = {}
        files: dict[str, tuple[int, bytes]] = {}
        pending = [("", str(root))]
        while pending:
            rel, path = pending.pop()
            with os.scandir(path) as entries:
                listed = sorted(entries, key=lambda entry: entry.name)
            for entry in listed:
                child = f"{rel}/{entry.name}" if rel else entry.name
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode):
                    dirs[child] = stat.S_IMODE(info.st_mode)
                    pending.append((child, entry.path))
                elif stat.S_ISREG(info.st_mode):
                    with open(entry.path, "rb") as handle:
                        files[child] = (stat.S_IMODE(info.st_mode), handle.read())
                else:
                    raise ValueError(f"{entry.path}: not a directory or a regular file")
        return cls(dict(sorted(dirs.items())), files)

    def restore(self, root: Path) -> None:
        """Make `root` hold exactly this tree: extra entries go, changed files are rewritten."""
        if root.is_symlink() or (root.exists() and not root.is_dir()):
            root.unlink()
        root.mkdir(exist_ok=True)
        kept_dirs: set[str] = set()
        kept_files: set[str] = set()
        pending = [("", str(root))]
        while pending:
            rel, path = pending.pop()
            with os.scandir(path) as entries:
                listed = list(entries)
            for entry in listed:
                child = f"{rel}/{entry.name}" if rel else entry.name
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode) and child in self.dirs:
                    if stat.S_IMODE(info.st_mode) != self.dirs[child]:
                        os.chmod(entry.path, self.dirs[child])
                    kept_dirs.add(child)
                    pending.append((child, entry.path))
                elif stat.S_ISDIR(info.st_mode):
                    shutil.rmtree(entry.path)
                elif self._unchanged(child, entry.path, info):
                    kept_files.add(child)
                else:
                    os.unlink(entry.path)  # a symlink, a stranger, or a file that changed
        for rel, mode in self.dirs.items():  # parents first
            if rel not in kept_dirs:
                os.mkdir(root / rel, mode)
                os.chmod(root / rel, mode)  # mkdir's mode is masked by the umask
        for rel, (mode, content) in self.files.items():
            if rel not in kept_files:
                target = root / rel
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
                try:
                    os.fchmod(fd, mode)
                    rest = memoryview(content)
                    while rest:
                        rest = rest[os.write(fd, rest) :]
                finally:
                    os.close(fd)

    def _unchanged(self, rel: str, path: str, info: os.stat_result) -> bool:
        known = self.files.get(rel)
        if known is None or not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            return False
        mode, content = known
        if stat.S_IMODE(info.st_mode) != mode or info.st_size != len(content):
            return False
        # A raw descriptor (no buffered file object: ~3x cheaper, and a workspace holds a few
        # dozen files compared per scenario); O_NOFOLLOW: a link swapped in since the stat
        # above is refused, never read through.
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return False
        try:
            return os.read(fd, len(content) + 1) == content
        finally:
            os.close(fd)
