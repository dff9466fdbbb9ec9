"""The plugin as `--proctor` enables it: the suite, where traces go, and the gate's inputs.

Every process (the session's, or each xdist worker's) loads and contract-checks the suite
the way `proctor run` does (`load_checked_suite`), runs its own items through
`run_scenario` with the replay provider and one `SuiteCache`, and writes each trace to a
directory the controlling process made and handed to its workers (`workerinput`). The
controller hears every item's outcome through `pytest_runtest_logreport` (xdist relays the
workers' reports), and at session end reads the traces of the scenarios that ran and gates
them (`harness.pytest_plugin._gate`).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from governance import GovernanceError
from harness._checks import expand_checks
from harness._errors import HarnessError
from harness._scenario_runner import ProviderChoice, run_scenario
from harness._suite import CheckedSuite, load_checked_suite, new_run_id
from harness._suite_cache import SuiteCache
from harness._trace_store import write_trace
from harness.cli._options import DEFAULT_BASELINE, DEFAULT_SCENARIOS
from harness.pytest_plugin._nodes import (
    PLUGIN_KEY,
    SCENARIO_PROPERTY,
    ScenarioEntry,
    ScenarioFile,
    SuiteDir,
    SuiteInvalid,
)

if TYPE_CHECKING:
    from harness._results import CheckResult
    from harness._trace import Trace
    from harness.pytest_plugin._gate import GateOutcome, LoadedBaseline

TRACE_DIR_KEY = "proctor_trace_dir"
RUN_ID_KEY = "proctor_run_id"
GATE_FAILED = "gate failed"  # the key the terminal's closing line counts a failed gate under


class ProctorPlugin:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
        self.worker = workerinput is not None and TRACE_DIR_KEY in workerinput
        self.roots = _scenario_roots(config)
        _collect_roots_too(config, self.roots)
        self.fail_on_drift: bool = config.getoption("proctor_fail_on_drift")
        self.baseline: LoadedBaseline | None = None
        self.baseline_note: str | None = None
        if workerinput is not None and self.worker:
            self.trace_dir = Path(workerinput[TRACE_DIR_KEY])
            self.run_id: str = workerinput[RUN_ID_KEY]
        else:
            self.baseline, self.baseline_note = _chosen_baseline(config)
            self.run_id = new_run_id()
            self.trace_dir = Path(tempfile.mkdtemp(prefix="proctor-pytest-"))
        self._suite: CheckedSuite | SuiteInvalid | None = None
        self._files: dict[Path, list[ScenarioEntry]] = {}
        self._cache: SuiteCache | None = None
        self.ran: dict[str, None] = {}  # controller: ids whose run reported, in report order
        self.outcome: GateOutcome | None = None
        config.stash[PLUGIN_KEY] = self

    # -- the suite ---------------------------------------------------------------------------

    def suite(self) -> CheckedSuite:
        """The suite, loaded and contract-checked once per process; raises SuiteInvalid with
        the message `proctor run` prints for it."""
        if self._suite is None:
            try:
                self._suite = load_checked_suite(self.roots)
            except (GovernanceError, HarnessError) as exc:
                self._suite = SuiteInvalid(str(exc))
            else:
                self._files = _entries_by_file(self._suite)
        if isinstance(self._suite, SuiteInvalid):
            raise self._suite
        return self._suite

    def files_under(self, directory: Path) -> dict[Path, list[ScenarioEntry]]:
        self.suite()
        return {f: e for f, e in self._files.items() if directory in f.parents}

    def entries_of(self, file: Path) -> list[ScenarioEntry]:
        self.suite()
        return self._files.get(file, [])

    # -- running -----------------------------------------------------------------------------

    def run(self, scenario_id: str) -> tuple[Trace, list[CheckResult]]:
        """Run one scenario as `proctor run` does; its trace goes where the gate reads it."""
        loaded = self.suite().by_id(scenario_id)
        if loaded is None:
            raise HarnessError(f"scenario {scenario_id!r} is no longer in the suite")
        if self._cache is None:
            self._cache = SuiteCache()
        trace = run_scenario(
            loaded, run_id=self.run_id, provider=ProviderChoice("replay"), cache=self._cache
        )
        write_trace(self.trace_dir / f"{scenario_id}.json", trace)  # ids are file-name safe
        return trace, expand_checks(loaded.scenario, trace)

    # -- hooks -------------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_directory(self, path: Path, parent: pytest.Collector) -> Any:
        if path.resolve() in self.roots:
            return SuiteDir.from_parent(parent, path=path)
        return None

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> Any:
        if file_path.resolve() in self.roots:
            return ScenarioFile.from_parent(parent, path=file_path)
        return None

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist: each worker writes its traces where this process reads them."""
        node.workerinput[TRACE_DIR_KEY] = str(self.trace_dir)
        node.workerinput[RUN_ID_KEY] = self.run_id

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.worker or report.when != "call":
            return
        for name, value in report.user_properties:
            if name == SCENARIO_PROPERTY:
                self.ran[str(value)] = None

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.worker:
            return
        from harness.pytest_plugin._gate import gate_session

        self.outcome = gate_session(self, session)
        if self.outcome is not None and self.outcome.fails:
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:  # counted in the closing line: "5 passed, 1 gate failed"
                reporter.stats.setdefault(GATE_FAILED, []).append(_gate_report(self.outcome))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        outcome = self.outcome
        if outcome is None:
            return
        terminalreporter.write_sep(
            "=", outcome.title, red=outcome.fails, green=not outcome.fails, bold=True
        )
        quiet = terminalreporter.verbosity < 0 and not outcome.fails
        terminalreporter.write_line(outcome.summary if quiet else outcome.text.rstrip("\n"))

    def pytest_unconfigure(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        if not self.worker:
            shutil.rmtree(self.trace_dir, ignore_errors=True)


def _gate_report(outcome: GateOutcome) -> pytest.TestReport:
    """The failed gate as a report: plugins reading the terminal's stats expect reports."""
    where = "proctor gate"
    return pytest.TestReport(where, (where, None, where), {}, "failed", outcome.text, "call")


def _scenario_roots(config: pytest.Config) -> list[Path]:
    """The suite's files and directories, absolute: `--proctor-scenarios` relative to where
    pytest was started (as its positional paths are), else `scenarios/` under the rootdir."""
    given: list[str] = config.getoption("proctor_scenarios")
    here = config.invocation_params.dir
    roots = [(here / p).resolve() for p in given] or [
        (config.rootpath / DEFAULT_SCENARIOS).resolve()
    ]
    for root, shown in zip(roots, given or [str(roots[0])], strict=True):
        if not root.exists():
            raise pytest.UsageError(
                f"--proctor: no scenario suite at {shown} (name one with --proctor-scenarios PATH)"
            )
    return list(dict.fromkeys(roots))


def _collect_roots_too(config: pytest.Config, roots: list[Path]) -> None:
    """What pytest collects: with no path on the command line, the suite alone (not
    `testpaths` or the current directory); with paths, the suite too, unless a path lies
    inside it (it narrows the run to that part) or holds it (pytest walks into it anyway)."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = [str(root) for root in roots]
        return
    here = config.invocation_params.dir
    given = [(here / str(arg).split("::")[0]).resolve() for arg in config.args]
    for root in roots:
        if not any(g == root or root in g.parents or g in root.parents for g in given):
            config.args.append(str(root))


def _chosen_baseline(config: pytest.Config) -> tuple[LoadedBaseline | None, str | None]:
    """The baseline to gate against (read and verified now, before anything runs), or why
    there is none."""
    if config.getoption("proctor_no_baseline"):
        if config.getoption("proctor_baseline") is not None:
            raise pytest.UsageError("--proctor-baseline and --proctor-no-baseline: choose one")
        return None, "NOT GATED: --proctor-no-baseline"
    given: str | None = config.getoption("proctor_baseline")
    if given is not None:
        path = (config.invocation_params.dir / given).resolve()
        if not path.is_file():
            raise pytest.UsageError(f"--proctor-baseline: no baseline at {given}")
    else:
        path = config.rootpath / DEFAULT_BASELINE
        if not path.is_file():
            return None, (
                f"NOT GATED: no baseline at {DEFAULT_BASELINE} under the rootdir; regressions "
                "cannot be detected (record one with `proctor baseline record`)"
            )
    from harness.cli._eval_common import baseline_from_file
    from harness.pytest_plugin._gate import LoadedBaseline

    try:
        baseline, traces = baseline_from_file(path)
    except (GovernanceError, HarnessError) as exc:
        raise pytest.UsageError(f"--proctor: the baseline cannot be used: {exc}") from None
    return LoadedBaseline(path, baseline, traces), None


def _entries_by_file(suite: CheckedSuite) -> dict[Path, list[ScenarioEntry]]:
    live_only = set(suite.live_only)
    found: dict[Path, list[ScenarioEntry]] = {}
    for loaded in suite:
        found.setdefault(loaded.path.resolve(), []).append(
            ScenarioEntry(
                loaded.scenario_id,
                loaded.line,
                tuple(loaded.scenario.tags),
                loaded.scenario_id in live_only,
            )
        )
    return found
