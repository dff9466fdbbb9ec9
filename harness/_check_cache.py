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
match its own digest, or holds a scenario that does not validate is ignored (and replaced on
the next store). Entries are written to a temporary file and renamed, in a directory only the
user can write. `PROCTOR_CACHE_DIR` moves the cache; set to an empty value it is off.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import sys
import tempfile
import zlib
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness._scenario_load import LoadedScenario, resolve_policy_path, unpack_scenario

CACHE_ENV = "PROCTOR_CACHE_DIR"
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

    def __init__(self, directory: Path, checker: str) -> None:
        self._directory = directory
        self._checker = checker
        self._policy_digests: dict[Path, str | None] = {}  # a policy file read once per load

    def _key(self, raw: bytes) -> str:
        return hashlib.sha256(f"{self._checker}\0".encode() + raw).hexdigest()

    def _policy_digest(self, path: Path) -> str | None:
        if path not in self._policy_digests:
            self._policy_digests[path] = _file_digest(path)
        return self._policy_digests[path]

    def _policies(self, items: Sequence[LoadedScenario]) -> dict[str, str] | None:
        """policy as the scenarios write it -> the SHA-256 of the file it resolves to now."""
        found: dict[str, str] = {}
        for item in items:
            named = item.scenario.policy
            if named not in found:
                digest = self._policy_digest(resolve_policy_path(item))
                if digest is None:
                    return None
                found[named] = digest
        return found

    def get(self, file: Path, raw: bytes, shown: str) -> list[LoadedScenario] | None:
        """The file's checked scenarios (packed), or None: not stored, stale, or unreadable."""
        key = self._key(raw)
        try:
            text = (self._directory / f"{key}.json").read_text(encoding="utf-8")
            entry = json.loads(text)
            items = _entry_items(entry, key, file, shown)
        except (OSError, ValueError, TypeError, KeyError, zlib.error, ValidationError):
            return None  # unreadable or not what was stored: checked again, then replaced
        if items is None or self._policies(items) != entry["policies"]:
            return None
        return items

    def put(self, raw: bytes, items: Sequence[LoadedScenario]) -> None:
        """Store `items` (every scenario of a file whose bytes are `raw`, each checked and
        passed) for the next load. Best effort: a cache that cannot be written is skipped."""
        policies = self._policies(items)
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
        entry = {**body, "digest": _digest(body)}
        try:
            self._directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self._directory, prefix=".entry-")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump(entry, handle, separators=(",", ":"))
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


def _digest(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


def _entry_items(entry: Any, key: str, file: Path, shown: str) -> list[LoadedScenario] | None:
    """The entry's scenarios, each validated again; None when the entry is not intact."""
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None
    body = {k: v for k, v in entry.items() if k != "digest"}
    if entry.get("digest") != _digest(body) or not isinstance(entry["policies"], dict):
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
    if directory is None:
        return None
    return CheckCache(directory, checker_digest(registry_digest()))

