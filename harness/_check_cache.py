"""A content-addressed cache of checked scenario files: a file whose bytes, policies and checker
are what they were when it last passed is not parsed, validated and contract-checked again.

An entry is keyed by the SHA-256 of the file's bytes and of everything the check depends on
that is the same for every file (`checker_digest`: Proctor's own source, the versions of the
libraries that parse and validate, the built-in tool registry); it records the SHA-256 of each
policy file its scenarios name, resolved where the file is now, and holds each scenario as its
validated model's JSON, deflated (as a checked suite keeps it). An edit to the file, a policy,
or Proctor is a miss. Only files whose every scenario was checked and passed are stored (no MCP
scenario: their tool surface is a server's), so a hit stands for a check that passed.

The cache is an optimisation, never a source of truth: an entry that cannot be read, does not
carry a valid MAC, or holds a scenario that does not validate is ignored (and replaced on the
next store). A hit serves the entry's scenarios instead of the file's, so an entry must come
from this user's own Proctor: each is authenticated with HMAC-SHA256 under a per-user key kept
OUTSIDE the cache directory (`$PROCTOR_CACHE_KEY_FILE`, else `$XDG_CONFIG_HOME/proctor/
check-cache.key`, else `~/.config/proctor/check-cache.key`; created 0600), so entries planted
in a shared directory or restored from another machine's CI cache are ignored; and a directory
or entry not owned by the user, or writable by group or others, is not used at all. Entries
are written to a temporary file and renamed. `PROCTOR_CACHE_DIR` moves the cache; set to an
empty value it is off.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import os
import stat
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness._scenario_load import LoadedScenario, resolve_policy_path, unpack_scenario

CACHE_ENV = "PROCTOR_CACHE_DIR"
KEY_ENV = "PROCTOR_CACHE_KEY_FILE"
FORMAT = "proctor-checked-file/1"
_LIBRARIES = ("pydantic", "pydantic-core", "PyYAML", "jsonschema")


def default_cache_dir() -> Path | None:
    """`$PROCTOR_CACHE_DIR` (empty: no cache), else `$XDG_CACHE_HOME/proctor/checked`, else
    `~/.cache/proctor/checked`; None when there is no home to put it in."""
    value = os.environ.get(CACHE_ENV)
    if value is not None:
        return Path(value) if value.strip() else None
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:
            return None
    return Path(base) / "proctor" / "checked"


def default_key_file() -> Path | None:
    """`$PROCTOR_CACHE_KEY_FILE`, else `$XDG_CONFIG_HOME/proctor/check-cache.key`, else
    `~/.config/proctor/check-cache.key`: never inside the cache directory."""
    value = os.environ.get(KEY_ENV, "").strip()
    if value:
        return Path(value)
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    if not base:
        try:
            base = str(Path.home() / ".config")
        except RuntimeError:
            return None
    return Path(base) / "proctor" / "check-cache.key"


def _private(info: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else."""
    return info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _read_private(path: Path, limit: int) -> bytes | None:
    """A regular file's bytes (at most `limit`) when it is this user's alone; None otherwise.
    O_NOFOLLOW and O_NONBLOCK: a link or a FIFO planted under the name is never followed or
    waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not _private(info) or info.st_size > limit:
            return None
        return os.read(fd, limit + 1)[:limit]
    finally:
        os.close(fd)


def cache_key(path: Path) -> bytes | None:
    """This user's cache key, created (32 random bytes, 0600) on first use; None when it cannot
    be read or made, or is not the user's alone (then the cache is off)."""
    found = _read_private(path, 64)
    if found is not None:
        return found if len(found) == 32 else None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".key-")
        try:
            os.write(fd, os.urandom(32))
            os.close(fd)
            os.link(tmp, path)  # atomic and never replaces: a concurrent first use keeps one
        except FileExistsError:
            pass
        finally:
            Path(tmp).unlink(missing_ok=True)
    except OSError:
        return None
    found = _read_private(path, 64)
    return found if found is not None and len(found) == 32 else None


@functools.cache
def checker_digest(registry_digest: str) -> str:
    """What a check's verdict depends on besides the file and its policies: this code (the
    harness and governance sources and data), the parsing and validating libraries, Python."""
    found = hashlib.sha256(f"{FORMAT}\0{sys.version}\0{registry_digest}\0".encode())
    for name in _LIBRARIES:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "-"
        found.update(f"{name}={version}\0".encode())
    here = Path(__file__).resolve().parent
    for root in (here, here.parent / "governance"):
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith((".py", ".yaml", ".yml", ".json")):
                    path = Path(dirpath, name)
                    found.update(f"{path.relative_to(root.parent).as_posix()}\0".encode())
                    found.update(hashlib.sha256(path.read_bytes()).digest())
    return found.hexdigest()


def _file_digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


class CheckCache:
    """Checked scenario files under `directory`, for one checker (`checker_digest`)."""

    def __init__(self, directory: Path, checker: str, key: bytes) -> None:
        self._directory = directory
        self._checker = checker
        self._key_bytes = key
        self._policy_digests: dict[Path, str | None] = {}  # a policy file read once per load

    def note_policy(self, path: Path, digest: str) -> None:
        """The digest of the bytes a policy was compiled from for this load's checks. If the
        file was seen with other bytes earlier in the load (edited meanwhile), no entry can
        say which policy its check ran under: nothing naming it is stored."""
        known = self._policy_digests.setdefault(path, digest)
        if known != digest:
            self._policy_digests[path] = None

    def _usable(self) -> bool:
        try:
            return _private(os.stat(self._directory))
        except OSError:
            return False

    def _mac(self, body: dict[str, Any]) -> str:
        message = json.dumps(body, sort_keys=True).encode("utf-8")
        return hmac.new(self._key_bytes, message, hashlib.sha256).hexdigest()

    def _key(self, raw: bytes) -> str:
        return hashlib.sha256(f"{self._checker}\0".encode() + raw).hexdigest()

    def _policy_digest(self, path: Path) -> str | None:
        if path not in self._policy_digests:
            self._policy_digests[path] = _file_digest(path)
        return self._policy_digests[path]

    def policies(self, items: Sequence[LoadedScenario]) -> dict[str, str] | None:
        """policy as the scenarios write it -> the SHA-256 of the file it resolves to now
        (None when one cannot be read). Ask while the scenarios are still unpacked: a packed
        one is inflated and validated again to be asked its policy."""
        found: dict[str, str] = {}
        for item in items:
            named = item.scenario.policy
            if named not in found:
                digest = self._policy_digest(resolve_policy_path(item))
                if digest is None:
                    return None
                found[named] = digest
        return found

    def holds_all(self, files: Iterable[Path]) -> bool:
        """Every file has an entry for its bytes as they are now (not read, so not vouched
        for: `get` still verifies each). A file that cannot be read has none."""
        if not self._usable():
            return False
        for file in files:
            try:
                raw = file.read_bytes()
            except OSError:
                return False
            if not (self._directory / f"{self._key(raw)}.json").is_file():
                return False
        return True

    def get(self, file: Path, raw: bytes, shown: str) -> list[LoadedScenario] | None:
        """The file's checked scenarios (packed), or None: not stored, stale, or unreadable."""
        key = self._key(raw)
        if not self._usable():
            return None
        try:
            data = _read_private(self._directory / f"{key}.json", _ENTRY_LIMIT)
            if data is None:
                return None
            entry = json.loads(data.decode("utf-8"))
            items = _entry_items(entry, key, file, shown, self._mac)
        except (
            OSError, ValueError, TypeError, KeyError, zlib.error, ValidationError, RecursionError
        ):  # fmt: skip
            return None  # unreadable or not what was stored: checked again, then replaced
        if items is None or self.policies(items) != entry["policies"]:
            return None
        return items

    def put(
        self,
        raw: bytes,
        items: Sequence[LoadedScenario],
        policies: dict[str, str] | None = None,
    ) -> None:
        """Store `items` (every scenario of a file whose bytes are `raw`, each checked and
        passed) for the next load; `policies` is `self.policies(items)` when already known.
        Best effort: a cache that cannot be written is skipped."""
        if policies is None:
            policies = self.policies(items)
        if not items or policies is None:
            return
        key = self._key(raw)
        body = {
            "key": key,
            "policies": policies,
            "scenarios": [
                {
                    "line": item.line,
                    "id_line": item.line_of("id"),
                    "packed": _packed(item),
                }
                for item in items
            ],
        }
        entry = {**body, "mac": self._mac(body)}
        try:
            self._directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not self._usable():
                return  # someone else's, or writable by others: never written to (or trusted)
            fd, tmp = tempfile.mkstemp(dir=self._directory, prefix=".entry-")
            try:
                with os.fdopen(fd, "wb") as handle:  # one C-encoded string, not a chunk stream
                    handle.write(json.dumps(entry, separators=(",", ":")).encode("utf-8"))
                os.replace(tmp, self._directory / f"{key}.json")
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            return


def _packed(item: LoadedScenario) -> str:
    form = item.packed().form
    assert isinstance(form, bytes)  # packed: the deflated JSON of the validated model
    return base64.b64encode(form).decode("ascii")


_ENTRY_LIMIT = 64 * 1024 * 1024  # an entry is deflated scenarios: far below this


def _entry_items(
    entry: Any, key: str, file: Path, shown: str, mac: Callable[[dict[str, Any]], str]
) -> list[LoadedScenario] | None:
    """The entry's scenarios, each validated again; None when the entry is not intact or not
    this user's Proctor's (its MAC does not verify)."""
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None
    body = {k: v for k, v in entry.items() if k != "mac"}
    stated = entry.get("mac")
    if not isinstance(stated, str) or not hmac.compare_digest(stated, mac(body)):
        return None
    if not isinstance(entry["policies"], dict):
        return None
    items: list[LoadedScenario] = []
    for stored in entry["scenarios"]:
        line, id_line = stored["line"], stored["id_line"]
        if not (isinstance(line, int) and isinstance(id_line, int)):
            return None
        packed = base64.b64decode(stored["packed"], validate=True)
        scenario = unpack_scenario(packed)  # raises ValidationError when it is not a scenario
        items.append(
            LoadedScenario(
                form=packed,
                path=file,
                line=line,
                lines={("id",): id_line},
                display_path=shown,
                known_id=scenario.id,
            )
        )
    return items or None


def cache_for(registry_digest: Callable[[], str]) -> CheckCache | None:
    """The cache at `default_cache_dir()`, or None when it is off."""
    directory = default_cache_dir()
    key_file = default_key_file()
    if directory is None or key_file is None:
        return None
    if key_file.resolve().is_relative_to(directory.resolve()):
        return None  # a key beside the entries authenticates nothing
    key = cache_key(key_file)
    if key is None:
        return None
    return CheckCache(directory, checker_digest(registry_digest()), key)
