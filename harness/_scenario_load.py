"""Reading scenario files: every key's line, every problem of the suite in one readable error.

A path is a file or a directory searched recursively for `*.yaml`/`*.yml`; `scripts/` and
`policies/` directories (replay scripts, policies) are skipped. A file holds one scenario or a
list under `scenarios:`. All problems across all files are collected, so a suite is fixed in
one round rather than ten. `make schemas` rewrites the JSON Schema.
"""

from __future__ import annotations

import functools
import os
import re
import types
import typing
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, TypeAdapter, ValidationError

from governance import digest
from governance.config import (
    Loc,
    decode_text,
    did_you_mean,
    format_loc,
    load_json,
    load_yaml_with_lines,
    read_capped,
    render_json,
    schema_document,
    write_atomic,
)
from harness._errors import ScenarioError
from harness._scenario import Scenario, ScenarioFile
from harness._select import EVERYTHING, Picker, Selected, Selection

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "scenarios" / "scenario.schema.json"
# Replay scripts for `proctor ask` and the policies scenarios name live beside scenarios.
SKIPPED_DIRS = frozenset({"scripts", "policies", "servers"})
# What `proctor import agentdojo` writes (~1,000 scenarios that need the `agentdojo` extra):
# run when named (`--scenarios scenarios/agentdojo`), not when the folder holding it is run
# (`proctor run` says so); an `agentdojo` folder deeper down is an ordinary folder.
IMPORTED_DIR = "agentdojo"
_SUFFIXES = (".yaml", ".yml")
_LABEL = re.compile(r"^function-\w+\[.*, (\w+)\]$")


@functools.cache
def default_policy_path() -> Path:
    """The shipped policy a scenario's `policy: default` stands for (found once per process:
    resolving a package resource costs ~50 µs, and every scenario of a suite asks)."""
    return Path(str(resources.files("governance") / "data" / "default_policy.yaml"))


@dataclass(frozen=True, slots=True)
class LoadedScenario:
    """A validated scenario with where it came from, to point errors at the right line."""

    form: Scenario | bytes  # the validated model, or its JSON (deflated) once packed
    path: Path
    line: int  # the line of the scenario's first key
    lines: Mapping[Loc, int] = field(repr=False, compare=False)  # loc relative to the scenario
    display_path: str = ""  # relative and `/`-separated, as traces show it (default: `path`)
    # The scenario's id, kept beside a packed form: passes that need only the id (duplicate
    # ids, the spill's keys, trace names) do not inflate and validate the whole model for it.
    known_id: str = field(default="", repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.display_path:
            object.__setattr__(self, "display_path", self.path.as_posix())
        if not self.known_id and isinstance(self.form, Scenario):
            object.__setattr__(self, "known_id", self.form.id)

    @property
    def scenario(self) -> Scenario:
        form = self.form
        return form if isinstance(form, Scenario) else unpack_scenario(form)

    @property
    def scenario_id(self) -> str:
        """`scenario.id`, without unpacking a packed scenario whose id is known."""
        return self.known_id or self.scenario.id

    def packed(self) -> LoadedScenario:
        """This scenario as its JSON and without its line map: what a checked suite keeps of
        each scenario (a tenth of the model's memory), so memory does not grow with the suite.
        The model comes back on access; suite passes go scenario by scenario, so the few most
        recent stay parsed."""
        form = self.form
        # Deflated: a third of the JSON's size, and inflating costs microseconds a scenario.
        if isinstance(form, bytes):
            packed = form
        else:
            packed = zlib.compress(form.model_dump_json().encode("utf-8"), 1)
        return replace(self, form=packed, lines={k: v for k, v in self.lines.items() if k == _ID})

    def line_of(self, *loc: str | int) -> int:
        """The line of `loc` (e.g. "script", 0, "calls", 0, "tool"), or of its closest parent."""
        for end in range(len(loc), 0, -1):
            line = self.lines.get(tuple(loc[:end]))
            if line is not None:
                return line
        return self.line


_ID: Loc = ("id",)  # a packed scenario keeps the line of its id (duplicate ids name both)


@functools.lru_cache(maxsize=256)
def unpack_scenario(packed: bytes) -> Scenario:
    """A packed scenario's model (the few most recent stay parsed)."""
    return Scenario.model_validate_json(zlib.decompress(packed))


def resolve_mcp_config(loaded: LoadedScenario) -> Path | None:
    """The scenario's MCP servers file, resolved against the scenario file, or None."""
    config = loaded.scenario.mcp_config
    return None if config is None else (loaded.path.parent / config).resolve()


def mcp_config_digest(loaded: LoadedScenario) -> str | None:
    """The digest of the scenario's MCP config and its pins, by content (not by path).

    Parsed, so comments and formatting do not count; None without an MCP config. Of the lock,
    only the pinned digests count: the stored definitions must hash to them (or the lock is
    refused), so re-pinning the same tools in a richer lock format is not a changed scenario.
    """
    config = resolve_mcp_config(loaded)
    if config is None:
        return None
    lock = config.with_name(f"{config.stem}.lock.json")
    # Read with the readers the gateway uses (duplicate keys refused, the same scalars), so
    # the identity changes exactly when what a run would load changes.
    try:
        text = decode_text(
            read_capped(config, ScenarioError, subject="MCP config"),
            str(config),
            ScenarioError,
            subject="MCP config",
        )
        data = load_yaml_with_lines(text, str(config), ScenarioError, subject="MCP config")[0]
        pins: Any = None
        if lock.is_file():
            raw = read_capped(lock, ScenarioError, subject="MCP lock")
            pins = load_json(
                decode_text(raw, str(lock), ScenarioError, subject="MCP lock", yaml_breaks=False),
                str(lock),
                ScenarioError,
                subject="MCP lock",
            ).data
    except OSError as exc:
        raise ScenarioError(config, None, f"cannot read the MCP config ({exc})") from None
    if isinstance(pins, dict) and "servers" in pins:
        pins = pins["servers"]
    return digest({"config": data, "pins": pins})


def resolve_policy_path(loaded: LoadedScenario) -> Path:
    """`default` is the shipped policy; anything else is relative to the scenario's file."""
    if loaded.scenario.policy == "default":
        return default_policy_path()
    return loaded.path.parent / loaded.scenario.policy


@dataclass(frozen=True, slots=True)
class _Problem:
    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"


class FileCache(Protocol):
    """Checked files seen before (`harness._check_cache`): `get` returns a file's scenarios,
    already checked and packed, instead of loading it; `put` hears each file loaded."""

    def get(self, file: Path, raw: bytes, shown: str) -> list[LoadedScenario] | None: ...

    def put(self, raw: bytes, items: Sequence[LoadedScenario]) -> None: ...


def load_scenarios(
    paths: Sequence[Path],
    *,
    tags: Sequence[str] = (),
    each_file: Callable[[list[LoadedScenario]], list[LoadedScenario]] | None = None,
    selection: Selection | None = None,
) -> list[LoadedScenario]:
    """Load and validate every scenario under `paths`; keep those with ANY of `tags` (or what
    `selection` selects: `harness._select`).

    Raises one ScenarioError listing every problem (`FILE:LINE: ...` a line), including ids
    used twice across the suite, and when the suite is empty; a selection that matches nothing
    raises SelectionError. `each_file` sees each file's scenarios as soon as that file is
    loaded and returns what to keep of them.
    """
    return load_selected(paths, selection or Selection.of(tags=tags), each_file=each_file)[0]


def load_selected(
    paths: Sequence[Path],
    selection: Selection,
    *,
    each_file: Callable[[list[LoadedScenario]], list[LoadedScenario]] | None = None,
) -> tuple[list[LoadedScenario], Selected | None]:
    """`load_scenarios`, with what the selection chose (None: no selector, the whole suite)."""
    selected: list[LoadedScenario] = []
    chosen = stream_scenarios(
        paths, selected.extend, picker=selection.picker(), each_file=each_file
    )
    return selected, chosen


FileOutcome = tuple[list["LoadedScenario"], list["_Problem"]]  # a file's scenarios, problems
FileWork = Callable[[Path, str], FileOutcome]
# Runs `work` on every (file, display path), yielding the outcomes in file order (it may run
# some of them elsewhere: harness._suite_check_split).
FileSplit = Callable[[Sequence[tuple[Path, str]], FileWork], Iterator[FileOutcome]]


def stream_scenarios(
    paths: Sequence[Path],
    keep: Callable[[list[LoadedScenario]], object],
    *,
    picker: Picker | None = None,
    each_file: Callable[[list[LoadedScenario]], list[LoadedScenario]] | None = None,
    cache: FileCache | None = None,
    split: FileSplit | None = None,
) -> Selected | None:
    """`load_scenarios`, each file's selected scenarios handed to `keep` as soon as the file is
    loaded (and passed through `each_file`), so a big suite is never held whole here: a checked
    suite packs them to disk. Every problem is still raised at the end, all at once, so what
    `keep` was given is the suite only when this returns. A file `cache` has is not loaded,
    nor passed through `each_file`; one loaded without a problem is offered to it. `split`
    may read, load and check files elsewhere, handing back their outcomes in file order.
    Returns what `picker` selected (None when no selector was given)."""
    problems: list[_Problem] = []
    files: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    for path in paths:
        for file in _scenario_files(Path(path), problems):
            key = file.resolve()
            if key not in seen:
                seen.add(key)
                files.append((file, display_path(file)))
    picker = picker or EVERYTHING.picker()
    ids = _DuplicateIds()
    any_selected = False

    def work(file: Path, shown: str) -> FileOutcome:
        found: list[_Problem] = []
        raw = _read_file(file, found)
        if raw is None:
            return [], found
        items = cache.get(file, raw, shown) if cache is not None else None
        if items is None:
            items = _load_file(file, raw, shown, found)
            items = each_file(items) if each_file is not None else items
            if cache is not None and not found:
                cache.put(raw, items)
        return items, found

    outcomes = split(files, work) if split is not None else (work(*f) for f in files)
    for items, found in outcomes:
        problems.extend(found)
        ids.add(items)
        if picker.active:  # tags are read (packed scenarios inflated) only to select
            selected = [s for s in items if picker.pick(s.scenario_id, s.scenario.tags)]
        else:
            picker.count(len(items))
            selected = items
        any_selected = any_selected or bool(selected)
        keep(selected)
        del items, selected  # not held while the next file loads
    problems.extend(ids.problems)
    if problems:
        raise _suite_error(problems)
    if not any_selected and not picker.seen:
        where = ", ".join(str(p) for p in paths) or "(no paths given)"
        raise ScenarioError(where, None, "no scenarios found here; add a *.yaml scenario file")
    return picker.result()  # a selector matching nothing is named here, with the fix


def _suite_error(problems: Sequence[_Problem]) -> ScenarioError:
    first, rest = problems[0], problems[1:]
    return ScenarioError(
        first.path, first.line, "\n".join([first.message, *(str(p) for p in rest)])
    )


def _scenario_files(path: Path, problems: list[_Problem]) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        problems.append(_Problem(str(path), None, "no such file or directory; check the path"))
        return []
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(path):
        top = dirpath == str(path)  # only the given folder's own agentdojo/ is left out
        dirnames[:] = sorted(
            d for d in dirnames if d not in SKIPPED_DIRS and not (top and d == IMPORTED_DIR)
        )
        for name in filenames:
            if name.endswith(_SUFFIXES) and not name.startswith("scenario.schema."):
                found.append(Path(dirpath, name))
    return sorted(found, key=lambda p: p.relative_to(path).parts)


def display_path(file: Path) -> str:
    """`scenario_file` as traces show it: the same however the file was named and wherever
    `proctor` was started, since it depends only on where the file really is.

    It is relative to the scenario root, found walking up from the file: the first directory
    holding a `pyproject.toml` (the project), or the parent of the first directory named
    `scenarios`, whichever is nearer; failing both, the file's own directory.
    """
    absolute = file.resolve()
    for parent in absolute.parents:
        if (parent / "pyproject.toml").is_file():
            return absolute.relative_to(parent).as_posix()
        if parent.name == "scenarios":
            return absolute.relative_to(parent.parent).as_posix()
    return absolute.name


def _read_file(path: Path, problems: list[_Problem]) -> bytes | None:
    name = str(path)
    try:
        return read_capped(path, ScenarioError, subject="scenario file")
    except OSError as exc:
        problems.append(_Problem(name, None, f"cannot read the file ({exc.strerror or exc})"))
    except ScenarioError as exc:
        problems.append(_Problem(name, exc.line, exc.message))
    return None


def _load_file(
    path: Path, raw: bytes, shown: str, problems: list[_Problem]
) -> list[LoadedScenario]:
    name = str(path)
    try:
        text = decode_text(raw, name, ScenarioError, subject="scenario file")
        data, lines = load_yaml_with_lines(text, name, ScenarioError, subject="scenario file")
    except ScenarioError as exc:
        problems.append(_Problem(name, exc.line, exc.message))
        return []
    if data is None:
        problems.append(
            _Problem(
                name,
                1,
                "the scenario file is empty: write one scenario (id, description, request, "
                "script, expect) or a list of them under `scenarios:`",
            )
        )
        return []
    if not isinstance(data, dict):
        problems.append(
            _Problem(
                name,
                1,
                "a scenario file holds one scenario (a mapping) or a list of them under "
                f"`scenarios:`, not {_describe(data)}",
            )
        )
        return []
    found: list[_Problem] = []
    if "scenarios" in data:
        loaded = _load_list(path, data, lines, found)
    else:
        loaded = _load_one(path, data, lines, None, 0, found)
    problems.extend(sorted(found, key=lambda p: p.line or 0))
    return [replace(item, display_path=shown) for item in loaded]


def _load_list(
    path: Path, data: dict[str, Any], lines: Mapping[Loc, int], problems: list[_Problem]
) -> list[LoadedScenario]:
    for key in data:
        if key != "scenarios":
            problems.append(
                _Problem(
                    str(path),
                    lines.get((key,), 1),
                    f"unknown key {key!r} next to `scenarios:`: a list file holds only "
                    "`scenarios:`; move it into a scenario or remove it",
                )
            )
    items = data["scenarios"]
    if not isinstance(items, list) or not items:
        problems.append(
            _Problem(
                str(path),
                lines.get(("scenarios",), 1),
                "`scenarios:` must be a non-empty list of scenarios",
            )
        )
        return []
    # Each item's lines, relative to the item, in one pass: filtering the whole file's map per
    # item is quadratic.
    per_item: dict[int, dict[Loc, int]] = {}
    for loc, line in lines.items():
        if len(loc) > 2 and loc[0] == "scenarios" and isinstance(loc[1], int):
            own = per_item.get(loc[1])
            if own is None:
                own = per_item[loc[1]] = {}
            own[loc[2:]] = line
    loaded: list[LoadedScenario] = []
    for index, item in enumerate(items):
        first = lines.get(("scenarios", index), 1)
        loaded.extend(_load_one(path, item, per_item.get(index, {}), first, index, problems))
    return loaded


def _load_one(
    path: Path,
    data: Any,
    lines: dict[Loc, int],
    first: int | None,
    index: int,
    problems: list[_Problem],
) -> list[LoadedScenario]:
    """One scenario: `lines` relative to it, `first` the line of its list item (None: the
    file is this one scenario, which starts at its first key)."""
    if first is None:
        first = min((line for loc, line in lines.items() if len(loc) == 1), default=1)
    ident = data.get("id") if isinstance(data, dict) else None
    label = ident if isinstance(ident, str) and ident.strip() else f"#{index + 1}"
    if not isinstance(data, dict):
        problems.append(
            _Problem(
                str(path),
                first,
                f"scenario {label}: expected a mapping (id, description, request, script, "
                f"expect), not {_describe(data)}",
            )
        )
        return []
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        found = [
            _Problem(str(path), lines.get(loc, first), f"scenario {label}: {message}")
            for loc, message in _explain(exc, data)
        ]
        problems.extend(found)
        return []
    return [LoadedScenario(form=scenario, path=path, line=first, lines=lines)]


class _DuplicateIds:
    """Ids used twice across the suite, file by file: each id's first place is kept (its file
    and line), not the scenario."""

    def __init__(self) -> None:
        self._first: dict[str, tuple[Path, int]] = {}
        self.problems: list[_Problem] = []

    def add(self, loaded: Sequence[LoadedScenario]) -> None:
        for item in loaded:
            sid = item.scenario_id
            place = (item.path, item.line_of("id"))
            earlier = self._first.setdefault(sid, place)
            if earlier is not place:
                self.problems.append(
                    _Problem(
                        str(item.path),
                        place[1],
                        f"scenario {sid}: duplicate id, first used at {earlier[0]}:"
                        f"{earlier[1]}; scenario ids are unique across the suite, rename one",
                    )
                )


# -- readable validation errors ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Place:
    """Where one pydantic error points, in the user's terms."""

    shown: Loc  # the path as the user wrote it (keys and indices, no union labels)
    existing: Loc  # the deepest part of `shown` present in the data (its line is known)
    annotation: Any  # the declared type there (None when unknown)
    parent: Any  # the declared type of the container of the last part
    value: Any  # the value there (None when missing)
    is_key: bool = False  # the error is about a mapping key itself (pydantic's "[key]")
    no_member_fits: tuple[Any, ...] = ()  # a union none of whose members the value looks like


def _explain(exc: ValidationError, data: Any) -> list[tuple[Loc, str]]:
    """(line location, message) per distinct problem, with union noise removed."""
    found: list[tuple[Loc, str]] = []
    seen: set[str] = set()
    for error in exc.errors(include_url=False):
        place = _locate(tuple(error["loc"]), data)
        if place is None:
            continue  # an error of a union member the value is clearly not meant to be
        where, text = _message(error, place)
        message = f"{format_loc(where)}: {text}" if where else text
        if message not in seen:
            seen.add(message)
            found.append((place.existing, message))
    return found


def _unwrap(annotation: Any) -> Any:
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def _union_members(annotation: Any) -> tuple[Any, ...] | None:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return tuple(a for a in typing.get_args(annotation) if a is not type(None))
    return None


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _label_member(members: tuple[Any, ...], label: object) -> Any:
    if not isinstance(label, str):
        return None
    match = _LABEL.match(label)
    name = match.group(1) if match else label
    return next((m for m in members if getattr(m, "__name__", None) == name), None)


def _fits(member: Any, value: Any) -> bool:
    if _is_model(member):
        return isinstance(value, Mapping)
    if member is str:
        return isinstance(value, str)
    return True


def _preferred(members: tuple[Any, ...], value: Any) -> Any:
    """The union member `value` is meant to be: for mappings, the model its keys fit best."""
    fitting = [m for m in members if _fits(m, value)]
    if not fitting:
        return None
    models = [m for m in fitting if _is_model(m)]
    if isinstance(value, Mapping) and len(models) > 1:

        def score(model: Any) -> tuple[int, int]:
            fields = model.model_fields
            required = sum(1 for n, f in fields.items() if f.is_required() and n in value)
            return required, sum(1 for n in fields if n in value)

        return max(models, key=score)  # the first of equals wins
    return fitting[0]


def _locate(loc: Loc, data: Any) -> _Place | None:
    annotation: Any = Scenario
    parent: Any = None
    key_annotation: Any = None
    value: Any = data
    present = True
    shown: list[str | int] = []
    existing: Loc = ()
    is_key = False
    index = 0
    while index < len(loc):
        annotation = _unwrap(annotation)
        members = _union_members(annotation)
        if members is not None:
            member = _label_member(members, loc[index])
            if member is not None:
                wanted = _preferred(members, value) if present else member
                if wanted is None:
                    return _Place(tuple(shown), existing, annotation, parent, value, False, members)
                if wanted is not member:
                    return None
                annotation = member
                index += 1
                continue
        part = loc[index]
        index += 1
        if part == "[key]":
            annotation, is_key = key_annotation, True
            continue
        parent = annotation
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if _is_model(annotation) and isinstance(part, str):
            info = annotation.model_fields.get(part)
            annotation = info.annotation if info is not None else None
        elif origin is list and isinstance(part, int) and args:
            annotation = args[0]
        elif origin is dict and isinstance(part, str) and len(args) == 2:
            key_annotation, annotation = args
        else:
            annotation = None
        shown.append(part)
        if present and isinstance(value, Mapping) and isinstance(part, str) and part in value:
            value = value[part]
            existing = tuple(shown)
        elif (
            present and isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value)
        ):
            value = value[part]
            existing = tuple(shown)
        else:
            present, value = False, None
    return _Place(tuple(shown), existing, _unwrap(annotation), parent, value, is_key)


def _message(error: Mapping[str, Any], place: _Place) -> tuple[Loc, str]:
    """(the location to name, what is wrong there and how to fix it)."""
    kind = error["type"]
    shown = place.shown
    if place.no_member_fits:
        shapes = sorted({"a mapping" if _is_model(m) else _shape(m) for m in place.no_member_fits})
        return shown, f"expected {' or '.join(shapes)}, not {_describe(place.value)}"
    if kind == "extra_forbidden" and shown:
        key = str(shown[-1])
        allowed = sorted(place.parent.model_fields) if _is_model(place.parent) else []
        hint = _did_you_mean(key, allowed)
        if not hint and allowed:
            hint = f"; allowed keys: {', '.join(allowed)}"
        return shown[:-1], f"unknown key {key!r}{hint}"
    if kind == "missing" and shown:
        return shown[:-1], f"missing required key {shown[-1]!r}"
    if kind in ("literal_error", "enum"):
        choices = [str(c) for c in typing.get_args(place.annotation)]
        value = shown[-1] if place.is_key and shown else error.get("input")
        what = "key" if place.is_key else "value"
        text = f"{what} {value!r} is not allowed here"
        if choices:
            text += f"; use one of: {', '.join(choices)}"
            text += _did_you_mean(str(value), choices)
        return shown, text
    if kind == "model_type":
        return shown, f"expected a mapping, not {_describe(error.get('input'))}"
    if kind == "string_pattern_mismatch":
        pattern = (error.get("ctx") or {}).get("pattern", "")
        return shown, f"{error.get('input')!r} does not match the pattern {pattern}"
    return shown, str(error["msg"]).removeprefix("Value error, ")


def _did_you_mean(word: str, choices: Sequence[str]) -> str:
    return did_you_mean(word, choices)


def _shape(annotation: Any) -> str:
    names = {str: "a string", int: "an integer", bool: "a boolean", float: "a number"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _describe(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if value is None:
        return "an empty value"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    return f"{type(value).__name__} {value!r}"


# -- the JSON Schema -----------------------------------------------------------------------


def scenario_json_schema() -> dict[str, Any]:
    """The JSON Schema of a scenario file: one scenario, or a list of them under `scenarios:`."""
    return schema_document(
        TypeAdapter(Scenario | ScenarioFile).json_schema(),
        "Proctor scenario file",
        description="One scenario, or a list of them under `scenarios:`. Generated from "
        "harness/_scenario.py by `make schemas`; do not edit by hand.",
    )


def render_scenario_schema() -> str:
    """The schema exactly as committed: sorted keys, two-space indent, trailing newline."""
    return render_json(scenario_json_schema())


def write_scenario_schema(path: Path = SCHEMA_PATH) -> Path:
    """Regenerate the committed schema file."""
    return write_atomic(path, render_scenario_schema())
