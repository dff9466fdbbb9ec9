"""Reading policy files: YAML with line numbers, errors that name file and line, hot reload.

A file that cannot be used is a `PolicyError`; a `PolicyFile` whose file turns bad raises on
the next `current()` instead of quietly keeping the stale policy (the firewall then blocks).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from governance._clock import Clock, SystemClock
from governance._errors import PolicyError
from governance._policy_eval import Policy, compile_policy
from governance._policy_model import SCHEMA_PATH, LocatedValueError, PolicyModel
from governance._policy_model import policy_json_schema as policy_json_schema

Loc = tuple[str | int, ...]

_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_MAX_NODES = 100_000
_MAX_ERRORS = 10
# Edits inside this window of a file's mtime may not move the mtime on a coarse clock.
_RACY_WINDOW = dt.timedelta(seconds=2)


class _LineLoader(yaml.SafeLoader):
    """A SafeLoader whose mapping walk records the 1-based line of every key and item."""

    def __init__(self, text: str, path: str) -> None:
        super().__init__(text)
        self.policy_path = path
        self.lines: dict[Loc, int] = {}
        self._visited = 0

    def error(self, node: Node, message: str) -> PolicyError:
        return PolicyError(self.policy_path, node.start_mark.line + 1, message)

    def to_data(self, node: Node, loc: Loc = (), active: frozenset[int] = frozenset()) -> Any:
        self._visited += 1
        if self._visited > _MAX_NODES:
            raise self.error(node, f"the policy has more than {_MAX_NODES} YAML nodes")
        if id(node) in active:
            raise self.error(node, "a YAML alias refers to itself; write the value out")
        inner = active | {id(node)}
        if isinstance(node, MappingNode):
            if node.tag != _MAP_TAG:
                raise self.error(node, f"unsupported YAML tag {node.tag!r}; remove it")
            result: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = self._key(key_node, loc)
                if key in result:
                    first = self.lines[(*loc, key)]
                    raise self.error(
                        key_node,
                        f"duplicate key {key!r}{_in(loc)} (first on line {first}): a mapping may "
                        "name each key once; delete or merge one of them",
                    )
                self.lines[(*loc, key)] = key_node.start_mark.line + 1
                result[key] = self.to_data(value_node, (*loc, key), inner)
            return result
        if isinstance(node, SequenceNode):
            if node.tag != _SEQ_TAG:
                raise self.error(node, f"unsupported YAML tag {node.tag!r}; remove it")
            items = []
            for index, item in enumerate(node.value):
                self.lines[(*loc, index)] = item.start_mark.line + 1
                items.append(self.to_data(item, (*loc, index), inner))
            return items
        return self.construct_object(node, deep=True)

    def _key(self, node: Node, loc: Loc) -> str:
        if node.tag == _MERGE_TAG:
            raise self.error(node, "YAML merge keys ('<<') are not supported; write the keys out")
        if not isinstance(node, ScalarNode):
            raise self.error(node, f"a key{_in(loc)} must be a plain string")
        key = self.construct_object(node, deep=True)
        if not isinstance(key, str):
            raise self.error(node, f"key {node.value!r}{_in(loc)} must be a string; quote it")
        return key


def _in(loc: Loc) -> str:
    return f" in {format_loc(loc)}" if loc else ""


def format_loc(loc: Loc) -> str:
    """`("rules", 2, "effect")` -> `rules[2].effect`."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _data_loc(data: Any, loc: Loc) -> tuple[Loc, Loc]:
    """(the path as the user wrote it, the deepest part of it that exists in the file)."""
    shown: list[str | int] = []
    existing: Loc = ()
    current = data
    for part in loc:
        if isinstance(current, Mapping) and isinstance(part, str):
            shown.append(part)
            if part not in current:
                break  # a missing key: name it, point at its parent
            current = current[part]
            existing = tuple(shown)
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            shown.append(part)
            current = current[part]
            existing = tuple(shown)
        else:
            break  # pydantic's own labels (union members, validator names)
    return tuple(shown), existing


def _message(error: Mapping[str, Any], shown: Loc) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return (
            f"unknown key {shown[-1]!r}: remove it or fix its spelling "
            f"(the schema is governance/data/{SCHEMA_PATH.name})"
        )
    if kind == "missing":
        return f"missing required key {shown[-1]!r}"
    message = str(error["msg"])
    return message.removeprefix("Value error, ")


def _validation_error(
    exc: ValidationError, data: Any, path: str, lines: dict[Loc, int]
) -> PolicyError:
    found: list[tuple[int, str]] = []
    seen: set[str] = set()
    for error in exc.errors(include_url=False):
        loc: Loc = tuple(error["loc"])
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, LocatedValueError):
            loc = (*loc, *cause.loc)
        shown, existing = _data_loc(data, loc)
        where = format_loc(shown)
        if where in seen:
            continue  # one message per location is enough
        seen.add(where)
        line = lines.get(existing, 1)
        text = _message(error, shown)
        found.append((line, f"{where}: {text}" if where else text))
    found.sort(key=lambda item: item[0])
    line, message = found[0]
    extra = [f"{path}:{ln}: {msg}" for ln, msg in found[1:_MAX_ERRORS]]
    if len(found) > _MAX_ERRORS:
        extra.append(f"... and {len(found) - _MAX_ERRORS} more problems")
    return PolicyError(path, line, "\n".join([message, *extra]))


def _yaml_problem(exc: yaml.MarkedYAMLError, text: str) -> tuple[int | None, str]:
    """The 1-based line of the problem and a readable description of it."""
    problem, context = exc.problem_mark, exc.context_mark
    mark = problem or context
    if problem is not None and context is not None and problem.index >= len(text.rstrip()):
        mark = context  # "unexpected end of stream": point at what was left open
    detail = ": ".join(str(p) for p in (exc.context, exc.problem) if p)
    if context is not None and mark is not None and context.line != mark.line:
        detail += f" (see line {context.line + 1})"
    return (mark.line + 1 if mark is not None else None), detail


def parse_policy(text: str, path: str = "<string>") -> Policy:
    """Validate and compile policy YAML. Raises PolicyError naming `path` and the line."""
    loader = _LineLoader(text, path)
    try:
        try:
            root = loader.get_single_node()
            data = None if root is None else loader.to_data(root)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        line, detail = _yaml_problem(exc, text)
        raise PolicyError(path, line, f"invalid YAML: {detail}") from None
    except yaml.YAMLError as exc:
        raise PolicyError(path, None, f"invalid YAML: {exc}") from None
    if data is None:
        raise PolicyError(
            path, 1, "the policy file is empty: write `version: 1` and at least one rule"
        )
    if not isinstance(data, dict):
        raise PolicyError(
            path,
            1,
            "a policy must be a mapping with the keys version, defaults, rules and (optionally) "
            "budgets",
        )
    try:
        model = PolicyModel.model_validate(data)
    except ValidationError as exc:
        raise _validation_error(exc, data, path, loader.lines) from None
    return compile_policy(model, path=path)


def _decode(raw: bytes, path: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise PolicyError(path, line, "the policy is not UTF-8 text; save it as UTF-8") from None


def _read(path: Path) -> tuple[os.stat_result, bytes]:
    try:
        with path.open("rb") as handle:
            stat = os.fstat(handle.fileno())
            return stat, handle.read()
    except OSError as exc:
        raise PolicyError(
            path, None, f"cannot read the policy file ({exc.strerror or exc}); check the path"
        ) from None


def load_policy(path: str | Path) -> Policy:
    """Read, validate and compile one policy file."""
    _, raw = _read(Path(path))
    return parse_policy(_decode(raw, str(path)), str(path))


class PolicyFile:
    """The policy in force, re-read when the file changes: edits apply on the next call.

    `current()` stats the file; only a changed (mtime, size, inode) triggers a read, and only
    changed bytes trigger a re-parse. A file modified within the last two seconds is re-read
    (not re-parsed) on every call, since a coarse filesystem clock may not have moved its
    mtime. A file that turns bad raises PolicyError every time until it is fixed: a stale
    policy is never used silently.
    """

    def __init__(self, path: str | Path, *, clock: Clock | None = None) -> None:
        self._path = Path(path)
        self._clock: Clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._key: tuple[int, int, int] | None = None
        self._sha: str | None = None
        self._policy: Policy | None = None
        self._reloads = 0
        with self._lock:
            self._refresh(initial=True)

    @property
    def path(self) -> Path:
        return self._path

    @property
    def reloads(self) -> int:
        """How many times the file was re-parsed after the first load."""
        with self._lock:
            return self._reloads

    def current(self) -> Policy:
        with self._lock:
            return self._refresh(initial=False)

    def _refresh(self, *, initial: bool) -> Policy:
        try:
            stat = os.stat(self._path)
        except OSError as exc:
            self._forget()
            raise PolicyError(
                self._path, None, f"cannot read the policy file ({exc.strerror or exc})"
            ) from None
        key = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if self._policy is not None and key == self._key:
            return self._policy
        try:
            stat, raw = _read(self._path)
        except PolicyError:
            self._forget()
            raise
        sha = hashlib.sha256(raw).hexdigest()
        key = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if self._policy is not None and sha == self._sha:
            self._key = self._stable(key)
            return self._policy
        if not initial:
            self._reloads += 1
        try:
            policy = parse_policy(_decode(raw, str(self._path)), str(self._path))
        except PolicyError:
            self._forget()
            raise
        self._policy, self._sha, self._key = policy, sha, self._stable(key)
        return policy

    def _stable(self, key: tuple[int, int, int]) -> tuple[int, int, int] | None:
        """The stat key, or None when the mtime is too recent to trust (a "racy" file)."""
        try:
            mtime = dt.datetime.fromtimestamp(key[0] / 1e9, tz=dt.UTC)
        except (OverflowError, ValueError, OSError):
            return None  # an mtime no datetime can hold: never trust it, re-read each time
        return key if mtime < self._clock.now() - _RACY_WINDOW else None

    def _forget(self) -> None:
        self._policy, self._sha, self._key = None, None, None
