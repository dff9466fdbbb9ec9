"""Where and with what code a shard ran, and a merge scores: git HEAD, the checkout's
uncommitted changes, and the code itself (Proctor, Python, dependency versions, the harness and
governance source as imported). `proctor merge` compares these with the shards' so that results
are not gated by other code than produced them.

Only `proctor run --shard` and `proctor merge` call this (a few git calls and ~2 MB hashed).
"""

from __future__ import annotations

import hashlib
import platform
import re
import subprocess
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from harness._shard import CodeRecord, TreeRecord

# Untracked files that can change what runs: Python code (a new module shadows or is imported).
# Untracked scenarios, policies and baselines are in the suite and baseline digests already;
# untracked report directories (the shards' own) must not count.
_UNTRACKED_CODE = (".py", ".pyi", ".pth")
_GIT_TIMEOUT = 60


def _git(*args: str) -> bytes | None:
    try:
        done = subprocess.run(
            ["git", *args], capture_output=True, check=False, timeout=_GIT_TIMEOUT
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def current_commit() -> str | None:
    """git HEAD of the working directory's repository; None outside one (or without git)."""
    out = _git("rev-parse", "--verify", "-q", "HEAD")
    return out.decode("utf-8", "replace").strip() or None if out is not None else None


def tree_state() -> TreeRecord | None:
    """The uncommitted changes of the working directory's checkout (tracked files against
    HEAD, staged or not, and untracked Python files); None outside a repository."""
    top = _git("rev-parse", "--show-toplevel")
    if top is None or current_commit() is None:
        return None
    root = Path(top.decode("utf-8", "surrogateescape").strip())
    diff = _git("-C", str(root), "diff", "HEAD", "--binary", "--no-ext-diff", "--no-textconv")
    listed = _git("-C", str(root), "ls-files", "-z", "--others", "--exclude-standard")
    if diff is None or listed is None:
        return TreeRecord(dirty=True, digest=_digest([b"unreadable"]))  # fail closed
    names = sorted(
        name
        for name in listed.decode("utf-8", "surrogateescape").split("\0")
        if name.endswith(_UNTRACKED_CODE)
    )
    if not diff and not names:
        return TreeRecord(dirty=False)
    parts = [diff]
    for name in names:
        try:
            content = hashlib.sha256((root / name).read_bytes()).hexdigest()
        except OSError:
            content = "unreadable"
        parts.append(f"\0{name}\0{content}".encode("utf-8", "surrogateescape"))
    return TreeRecord(dirty=True, digest=_digest(parts))


@cache
def code_state() -> CodeRecord:
    """The code this process runs: what scores and gates a run besides its inputs."""
    import importlib.metadata as metadata

    import governance
    import harness

    try:
        version = metadata.version("proctor")
        requires = metadata.requires("proctor") or []
    except metadata.PackageNotFoundError:
        version, requires = "(not installed)", []
    deps = []
    for requirement in requires:
        if "extra ==" in requirement:
            continue
        name = re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0]
        try:
            deps.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            deps.append(f"{name} (missing)")
    return CodeRecord(
        proctor=version,
        python=f"{platform.python_implementation()} {platform.python_version()}",
        dependencies=_digest(d.encode() for d in sorted(deps)),
        source=source_digest(Path(p) for pkg in (harness, governance) for p in pkg.__path__),
    )


def source_digest(roots: Iterable[Path]) -> str:
    """Every file under the package directories (code and the data it ships: the knowledge
    base kb.search answers from, the default policy), by relative path and content. Left out:
    compiled caches (they follow the source) and py.typed markers (an editable checkout has
    harness/py.typed, a wheel does not; neither changes a result)."""
    hasher = hashlib.sha256()
    for root in roots:
        files = sorted(
            p for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
            and p.name != "py.typed"
        )  # fmt: skip
        for path in files:
            hasher.update(f"{root.name}/{path.relative_to(root).as_posix()}\0".encode())
            hasher.update(hashlib.sha256(path.read_bytes()).digest())
    return "sha256:" + hasher.hexdigest()


def _digest(parts: Iterable[bytes]) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(hashlib.sha256(part).digest())
    return "sha256:" + hasher.hexdigest()
