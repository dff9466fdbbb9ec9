"""Load a suite and contract-check it: all that `proctor check` needs, and nothing that runs.

Kept apart from harness._suite so `proctor check` never imports the runner, the stores or a
provider; harness._suite re-exports these names for the run path.
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import overload

from governance import Policy, ToolRegistry
from governance.policy import read_policy
from governance.tools import builtin_registry as new_builtin_registry
from harness._check_cache import CheckCache, cache_for
from harness._errors import ScenarioError
from harness._scenario_contract import ContractViolation, check_contract
from harness._scenario_load import (
    FileOutcome,
    FileWork,
    LoadedScenario,
    resolve_mcp_config,
    resolve_policy_path,
    stream_scenarios,
)
from harness._select import Selected, Selection
from harness._spill import Spill
from harness._suite_check_split import split_in_two


def registry_for(loaded: LoadedScenario) -> ToolRegistry:
    """The tool surface a scenario runs with: built-in tools, plus its MCP servers' tools; or
    an AgentDojo suite's tools alone."""
    task = loaded.scenario.agentdojo
    if task is not None:
        return agentdojo_registry(task.suite, task.benchmark_version)
    config = resolve_mcp_config(loaded)
    return builtin_registry() if config is None else mcp_registry(config)


@cache
def agentdojo_registry(suite: str, benchmark_version: str) -> ToolRegistry:
    """An AgentDojo suite's tools as its scenarios run them (the same descriptors, so the same
    digest); no environment behind them: the contract check lists tools, it never calls one."""
    from governance.agentdojo import AgentDojoToolSource, suite_tools

    registry = ToolRegistry()
    registry.add_source(AgentDojoToolSource(suite_tools(suite, benchmark_version), None))
    return registry


def mcp_registry(config: Path) -> ToolRegistry:
    """Built-in tools plus the tools of the MCP servers in `config`."""
    return mcp_listing(config)[0]


@cache
def mcp_listing(config: Path) -> tuple[ToolRegistry, str | None]:
    """(the registry, None) when the config's lock stands for its servers: nothing is started
    and the MCP SDK is not imported. Otherwise the servers are started, listed and stopped, and
    the second item says why, for one line of `proctor check` output."""
    from governance import load_mcp_config, load_pins, locked_sources

    mcp = load_mcp_config(config)
    pins = load_pins(mcp.lock_path)
    registry = new_builtin_registry()
    locked = locked_sources(mcp, pins)
    if not isinstance(locked, str):
        for listing in locked:
            registry.add_source(listing)
        return registry, None
    # The MCP SDK loads only for configs whose lock cannot stand in for the servers.
    from governance import open_mcp_sources

    sources = open_mcp_sources(mcp)
    try:
        for source in sources:
            registry.add_source(source)
    finally:
        for source in sources:
            source.close()
    shown = _shown(config)
    steps = [] if all(s.pin_required for s in mcp.servers) else ["set `require_pins: true`"]
    if any(pins.definitions_of(s.name) is None for s in mcp.servers):
        steps.append(f"run `proctor mcp pin --config {shown}`")
    note = (
        f"{shown}: started its MCP servers to list their tools ({locked}); "
        f"{' and '.join(steps)} to check it without starting them"
    )
    return registry, note


def _shown(path: Path) -> Path:
    """`path` relative to the working directory when it is under it (as a user would type it)."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def with_policy(item: LoadedScenario, policy: str) -> LoadedScenario:
    """`item` naming another policy file (an absolute path: it resolves the same anywhere)."""
    return replace(item, form=item.scenario.model_copy(update={"policy": policy}), known_id="")


@cache
def builtin_registry() -> ToolRegistry:
    """The built-in tool surface, built once per process (every scenario's contract uses it)."""
    return new_builtin_registry()


def load_checked_suite(
    paths: Sequence[Path],
    tags: Sequence[str] = (),
    note: Callable[[str], object] | None = None,
    *,
    use_cache: bool = True,
    selection: Selection | None = None,
    jobs: int = 1,
    policy_override: Path | None = None,
) -> CheckedSuite:
    """Scenarios that passed their schema and their contract; anything else raises (exit 3).

    Each file's scenarios are checked, packed (kept as their JSON, without the line map) and
    spilled to disk as soon as that file is loaded, so a big suite is never held whole: memory
    does not grow with the suite. Scenarios with MCP servers wait until every file is loaded, so
    their servers are listed side by side. `note` hears one line per MCP config whose servers
    had to be started to list their tools.

    A file that passed before, unchanged, with the same policies and checker, comes from the
    check cache (`harness._check_cache`) instead of being loaded and checked again.

    `selection` (else `tags`) chooses the scenarios (`harness._select`); only those are
    contract-checked, and the suite's `selected` says what was chosen (None: the whole suite).

    With `jobs` > 1 the files are loaded and checked in two processes
    (`harness._suite_check_split`), with the same outcome.

    `policy_override`: every scenario runs under this policy file instead of the one it names
    (a what-if comparison); its scenarios are checked against it, never from the cache.
    """
    if policy_override is not None:
        use_cache = False
        override = str(policy_override.resolve())
    picker = (selection or Selection.of(tags=tags)).picker()
    policies: dict[Path, Policy] = {}

    def policy_for(item: LoadedScenario) -> Policy:
        path = resolve_policy_path(item)
        if path not in policies:
            policies[path], digest = read_policy(path)
            if checked_files is not None and checked_files.store is not None:
                checked_files.store.note_policy(path, digest)  # what this load's checks ran under
        return policies[path]

    violations: list[ContractViolation] = []
    waiting: list[LoadedScenario] = []
    checked_files = _CleanFiles(cache_for(lambda: builtin_registry().digest)) if use_cache else None

    def check_file(items: list[LoadedScenario]) -> list[LoadedScenario]:
        if policy_override is not None:
            items = [with_policy(item, override) for item in items]
        kept = []
        clean = True  # every scenario of the file checked here, and passed
        for item in items:
            if picker.active and not picker.wants(item.scenario_id, item.scenario.tags):
                kept.append(item.packed())  # not selected: load_scenarios drops it, unchecked
                clean = False
                continue
            # MCP scenarios wait for their servers; AgentDojo scenarios are checked against
            # their suite's registry, which the check cache does not key on: never cached.
            if resolve_mcp_config(item) is not None or item.scenario.agentdojo is not None:
                waiting.append(item)
                kept.append(item)
                clean = False
                continue
            found = check_contract([item], registry_for=registry_for, policy_for=policy_for)
            violations.extend(found)
            clean = clean and not found
            kept.append(item.packed())
        if checked_files is not None:
            checked_files.clean = clean
            if clean and checked_files.store is not None:
                checked_files.policies = checked_files.store.policies(items)  # still unpacked
        return kept

    def take() -> tuple[list[ContractViolation], list[LoadedScenario]]:
        """In a split check's helper: what checking its last file added here."""
        left = (violations[:], waiting[:])
        violations.clear()
        waiting.clear()
        return left

    def give(left: tuple[list[ContractViolation], list[LoadedScenario]]) -> None:
        violations.extend(left[0])
        waiting.extend(left[1])

    def split(files: Sequence[tuple[Path, str]], work: FileWork) -> Iterator[FileOutcome]:
        store = checked_files.store if checked_files is not None else None
        if store is not None and store.holds_all(path for path, _ in files):
            # A warm cache: reading every entry back here costs less than forking a helper
            # and passing half of them through a pipe (0.07-0.10 s vs 0.09-0.2 s of wall for
            # 1,000 scenarios). A stale entry is checked here, as a cold file would be.
            return (work(*file) for file in files)
        builtin_registry()  # built once, before the fork: both sides use it
        return split_in_two(files, work, take, give)

    suite = CheckedSuite()
    suite.selected = stream_scenarios(
        paths,
        suite.extend,
        picker=picker,
        each_file=check_file,
        cache=checked_files
        if checked_files is not None and checked_files.store is not None
        else None,
        split=split if jobs > 1 else None,
    )
    configs = _list_mcp_servers_at_once(waiting)
    if note is not None:
        for config in configs:
            said = mcp_listing(config)[1]
            if said is not None:
                note(said)
    violations += check_contract(waiting, registry_for=registry_for, policy_for=policy_for)
    if violations:
        raise ContractBroken(sorted(violations, key=lambda v: (str(v.path), v.line)))
    return suite


class _CleanFiles:
    """The check cache, offered only files whose every scenario was checked and passed (the
    check of each file says so in `clean` before the loader offers it)."""

    def __init__(self, store: CheckCache | None) -> None:
        self.store = store
        self.clean = False
        self.policies: dict[str, str] | None = None  # of the clean file, read before packing

    def get(self, file: Path, raw: bytes, shown: str) -> list[LoadedScenario] | None:
        return None if self.store is None else self.store.get(file, raw, shown)

    def put(self, raw: bytes, items: Sequence[LoadedScenario]) -> None:
        if self.store is not None and self.clean:
            self.store.put(raw, items, self.policies)
        self.clean = False
        self.policies = None


class CheckedSuite(Sequence[LoadedScenario]):
    """A checked suite's scenarios, packed and kept on disk (a `Spill`): what stays in memory
    per scenario is its position under its id and the index of its file's display path, so
    memory does not grow with the suite. Reading a scenario back costs an unpickle."""

    def __init__(self, items: Iterable[LoadedScenario] = ()) -> None:
        self.selected: Selected | None = None  # a focused run's selectors and counts
        self._spill: Spill[LoadedScenario] = Spill()
        self._files: list[str] = []  # distinct display paths
        self._file_of = array("I")  # position -> index in _files
        self.live_only: list[str] = []  # ids of scenarios without a script (no replay)
        for item in items:
            self.add(item)

    def extend(self, items: Iterable[LoadedScenario]) -> None:
        for item in items:
            self.add(item)

    def add(self, item: LoadedScenario) -> None:
        packed = item.packed()
        if _has_no_script(item):
            self.live_only.append(packed.scenario_id)
        self._spill.append(packed, key=packed.scenario_id)
        shown = packed.display_path
        if not self._files or self._files[-1] != shown:  # a file's scenarios come together
            self._files.append(shown)
        self._file_of.append(len(self._files) - 1)

    def __len__(self) -> int:
        return len(self._spill)

    @overload
    def __getitem__(self, index: int) -> LoadedScenario: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[LoadedScenario]: ...

    def __getitem__(self, index: int | slice) -> LoadedScenario | Sequence[LoadedScenario]:
        if isinstance(index, slice):
            return [self._spill.at(n) for n in range(len(self))[index]]
        return self._spill.at(range(len(self))[index])

    def __iter__(self) -> Iterator[LoadedScenario]:
        return iter(self._spill)

    def by_id(self, scenario_id: str) -> LoadedScenario | None:
        return self._spill.get(scenario_id)

    def ids(self) -> Iterator[str]:
        return self._spill.keys()

    def display_path_of(self, scenario_id: str) -> str | None:
        position = self._spill.position(scenario_id)
        return None if position is None else self._files[self._file_of[position]]


def _has_no_script(item: LoadedScenario) -> bool:
    """A live-only scenario; a packed one is read only when its JSON can hold an empty script
    (a replay suite pays a substring search per scenario, not a parse)."""
    form = item.form
    if isinstance(form, bytes) and b'"script":[]' not in zlib.decompress(form):
        return False
    return not item.scenario.script


def replayable(suite: Sequence[LoadedScenario]) -> Sequence[LoadedScenario]:
    """The suite without its live-only scenarios (itself when it has none): they have no
    script to replay."""
    if not isinstance(suite, CheckedSuite):
        kept = [item for item in suite if not _has_no_script(item)]
        return suite if len(kept) == len(suite) else kept
    if not suite.live_only:
        return suite
    skip = set(suite.live_only)
    return CheckedSuite(item for item in suite if item.scenario_id not in skip)


MAX_PARALLEL_CONFIGS = 4


def _list_mcp_servers_at_once(loaded: Sequence[LoadedScenario]) -> list[Path]:
    """The suite's MCP configs; fills `mcp_registry`'s cache for each, their servers started
    side by side: each listing mostly waits for a child process to boot.

    A config that fails is not cached, so the contract check meets the same failure again in
    scenario order and reports it exactly as it would have without this.
    """
    configs = sorted({c for item in loaded if (c := resolve_mcp_config(item)) is not None})
    if len(configs) < 2:
        return configs
    with ThreadPoolExecutor(min(len(configs), MAX_PARALLEL_CONFIGS)) as pool:
        for future in [pool.submit(mcp_listing, config) for config in configs]:
            future.exception()  # wait; a failure is raised again by the check, in order
    return configs


class ContractBroken(ScenarioError):
    """The suite names tools, rules or budgets that do not exist: nothing runs."""

    def __init__(self, violations: Sequence[ContractViolation]) -> None:
        self.violations = list(violations)
        first = self.violations[0]
        super().__init__(first.path, first.line, "\n".join(str(v) for v in self.violations))

    def __str__(self) -> str:
        lines = [str(v) for v in self.violations]
        return f"{len(lines)} contract violation(s):\n" + "\n".join(lines)
