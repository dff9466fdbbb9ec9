"""The collection tree `--proctor` adds: the suite's directories and files, one item per
scenario. Nodes mirror the files on disk, so nodeids are stable (`--lf`, xdist) and a
positional path inside the suite (`scenarios/reads.yaml`) selects what lies under it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from harness.pytest_plugin._markers import marker_name

if TYPE_CHECKING:
    from harness._results import CheckResult
    from harness._trace import Trace

# Each scenario item's reports carry its id under this name: xdist relays user_properties to
# the controlling process, where the gate is run (it appears in junit.xml as a property too).
SCENARIO_PROPERTY = "proctor_scenario"


class SuiteInvalid(Exception):
    """The suite failed to load or its contract check: `proctor run` would exit 3."""


@dataclass(frozen=True, slots=True)
class ScenarioEntry:
    """What an item needs to know of its scenario before it runs."""

    scenario_id: str
    line: int
    tags: tuple[str, ...]
    live_only: bool


class Runner(Protocol):
    """What the nodes ask of the plugin (harness.pytest_plugin._plugin.ProctorPlugin)."""

    def files_under(self, directory: Path) -> dict[Path, list[ScenarioEntry]]: ...

    def entries_of(self, file: Path) -> list[ScenarioEntry]: ...

    def run(self, scenario_id: str) -> tuple[Trace, list[CheckResult]]: ...


PLUGIN_KEY = pytest.StashKey[Runner]()


def _runner(node: pytest.Collector | pytest.Item) -> Runner:
    return node.config.stash[PLUGIN_KEY]


def _checked(node: pytest.Collector, read: Any) -> Any:
    """`read()`, an invalid suite raised as this node's collection error (the CLI's text)."""
    try:
        return read()
    except SuiteInvalid as exc:
        raise node.CollectError(
            f"the scenario suite is invalid (`proctor run` exits 3 on it; nothing runs):\n{exc}"
        ) from None


class SuiteDir(pytest.Directory):
    """A scenario directory given to `--proctor-scenarios` (or the default `scenarios/`)."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        files: dict[Path, list[ScenarioEntry]] = _checked(
            self, lambda: _runner(self).files_under(self.path.resolve())
        )
        return _children(self, self.path.resolve(), files)


class ScenarioDir(pytest.Directory):
    """A directory inside the suite holding scenario files."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        return _children(self, self.path.resolve(), _runner(self).files_under(self.path.resolve()))


def _children(
    parent: pytest.Directory, directory: Path, files: dict[Path, list[ScenarioEntry]]
) -> Iterator[pytest.Item | pytest.Collector]:
    """The scenario files directly in `directory` and the directories leading to the others,
    in name order (the loader's order)."""
    below = sorted({directory / f.relative_to(directory).parts[0] for f in files})
    for path in below:
        if path in files:
            yield ScenarioFile.from_parent(parent, path=path)
        else:
            yield ScenarioDir.from_parent(parent, path=path)


class ScenarioFile(pytest.File):
    """A scenario file (inside the suite, or given to `--proctor-scenarios` itself): one item
    per scenario, in file order."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        entries: list[ScenarioEntry] = _checked(
            self, lambda: _runner(self).entries_of(self.path.resolve())
        )
        for entry in entries:
            yield ScenarioItem.from_parent(self, name=entry.scenario_id, entry=entry)


class ScenarioItem(pytest.Item):
    """One scenario: run with the replay provider, failed when any of its checks fails."""

    def __init__(self, *, entry: ScenarioEntry, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entry = entry
        for tag in entry.tags:
            self.add_marker(_registered(self.config, marker_name(tag), tag))
        self.extra_keyword_matches.update(entry.tags)
        self.user_properties.append((SCENARIO_PROPERTY, entry.scenario_id))
        if entry.live_only:
            self.add_marker(
                pytest.mark.skip(
                    reason="live-only scenario (no script to replay): run it with "
                    "`proctor run --provider openai|stub`"
                )
            )

    def runtest(self) -> None:
        trace, checks = _runner(self).run(self.entry.scenario_id)
        failed = [c for c in checks if not c.passed]
        if failed:
            pytest.fail(_failure_text(self.entry.scenario_id, trace, checks, failed), pytrace=False)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.entry.line - 1, f"scenario {self.entry.scenario_id}"


_DECLARED = pytest.StashKey[set[str]]()


def _registered(config: pytest.Config, name: str, tag: str) -> str:
    """`name`, declared to pytest as a marker (once) so `--strict-markers` accepts it."""
    declared = config.stash.setdefault(_DECLARED, set())
    if name not in declared:
        known = {line.split(":")[0].split("(")[0].strip() for line in config.getini("markers")}
        if name not in known:
            config.addinivalue_line("markers", f"{name}: Proctor scenarios tagged {tag!r}")
        declared.add(name)
    return name


def _failure_text(
    scenario_id: str, trace: Trace, checks: list[CheckResult], failed: list[CheckResult]
) -> str:
    """The first line names the failed check ids (pytest's short summary shows it); then
    each failed check as `proctor run` lists it."""
    from harness.reports._terminal import failed_check_line

    ids = ", ".join(c.id for c in failed)
    lines = [
        f"{len(failed)} of {len(checks)} checks failed: {ids}",
        *(failed_check_line(c) for c in failed),
        f"(scenario {scenario_id} from {trace.scenario_file}; run status {trace.status}, "
        f"termination {trace.termination})",
    ]
    return "\n".join(lines)
