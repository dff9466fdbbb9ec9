"""The gate at session end, in the controlling process: the traces of every scenario that ran,
scored and gated by `harness._suite.assemble`, exactly as `proctor run` does.

A session that ran only some scenarios (`-k`, `-m`, `--lf`, `-x`, a path inside the suite) is
a partial run: gated only on what ran, against those scenarios' baseline entries
(`harness._partial`), with the CLI's PARTIAL RUN line naming the pytest selectors.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from governance import GovernanceError
from harness._baseline import Baseline
from harness._errors import HarnessError
from harness._select import Selected
from harness._suite import CheckedSuite, assemble
from harness._trace import Trace
from harness.pytest_plugin._nodes import SuiteInvalid
from harness.reports import exit_meaning, render_terminal


@dataclass(frozen=True, slots=True)
class LoadedBaseline:
    path: Path
    baseline: Baseline
    traces: dict[str, dict[str, Any]]


class GatedRun(Protocol):
    """What the gate reads of the session's plugin (harness.pytest_plugin._plugin)."""

    @property
    def config(self) -> pytest.Config: ...

    @property
    def roots(self) -> list[Path]: ...

    @property
    def ran(self) -> dict[str, None]: ...

    @property
    def trace_dir(self) -> Path: ...

    @property
    def run_id(self) -> str: ...

    @property
    def baseline(self) -> LoadedBaseline | None: ...

    @property
    def baseline_note(self) -> str | None: ...

    @property
    def fail_on_drift(self) -> bool: ...

    def suite(self) -> CheckedSuite: ...


@dataclass(frozen=True, slots=True)
class GateOutcome:
    title: str
    text: str  # what the terminal summary shows
    summary: str  # the one line shown with -q when the gate passed
    fails: bool  # the session fails for it


def gate_session(plugin: GatedRun, session: pytest.Session) -> GateOutcome | None:
    """The gate's verdict on the scenarios that ran (None when none did)."""
    if not plugin.ran:
        return None
    try:
        suite = plugin.suite()
    except SuiteInvalid as exc:
        return _not_run(f"the scenario suite no longer loads:\n{exc}")
    ran = [sid for sid in suite.ids() if sid in plugin.ran]
    missing = [sid for sid in ran if not (plugin.trace_dir / f"{sid}.json").is_file()]
    missing += sorted(set(plugin.ran) - set(ran))
    if missing:
        return _not_run(
            f"no trace of {', '.join(missing)}: their items ended in an error before their "
            "run did; fix that error and run again"
        )
    traces = [
        Trace.model_validate_json((plugin.trace_dir / f"{sid}.json").read_bytes()) for sid in ran
    ]
    baseline = plugin.baseline
    try:
        result = assemble(
            plugin.run_id,
            suite,
            traces,
            baseline=baseline.baseline if baseline is not None else None,
            baseline_traces=baseline.traces if baseline is not None else None,
            selected=_selected(plugin, session, suite, ran),
        )
    except (GovernanceError, HarnessError) as exc:
        return _not_run(str(exc))
    result = dataclasses.replace(result, fail_on_drift=plugin.fail_on_drift)
    code = result.exit_code()
    said = f"`proctor run` would exit {code}: {exit_meaning(result)}"
    text = render_terminal(result)
    if result.gate is None:
        note = plugin.baseline_note or "NOT GATED: no baseline was compared"
        return GateOutcome("Proctor: NOT GATED", f"{text}{note}", note, fails=False)
    fails = result.gate.fails(fail_on_drift=plugin.fail_on_drift)
    text += f"gated against {_shown(plugin, baseline.path) if baseline else 'the baseline'}"
    if fails:
        return GateOutcome("Proctor gate: FAILED", text, said, fails=True)
    return GateOutcome("Proctor gate: passed", text, said, fails=False)


def _shown(plugin: GatedRun, path: Path) -> str:
    """`path` relative to the rootdir when it is under it."""
    root = plugin.config.rootpath
    return path.relative_to(root).as_posix() if root in path.parents else str(path)


def _not_run(why: str) -> GateOutcome:
    text = f"the gate could not run (the session fails: nothing was compared):\n{why}"
    return GateOutcome("Proctor gate: NOT RUN", text, text, fails=True)


def _selected(
    plugin: GatedRun, session: pytest.Session, suite: CheckedSuite, ran: list[str]
) -> Selected | None:
    """A partial run's summary, None when every replayable scenario of the suite ran."""
    live_only = set(suite.live_only)
    if set(ran) == {sid for sid in suite.ids() if sid not in live_only}:
        return None
    return Selected(_selectors(plugin, session), tuple(ran), len(suite))


def _selectors(plugin: GatedRun, session: pytest.Session) -> tuple[str, ...]:
    """The pytest options that chose the scenarios, as typed."""
    config = plugin.config
    option = config.option
    here = config.invocation_params.dir
    shown = []
    for arg in config.args:
        path = (here / str(arg).split("::")[0]).resolve()
        if any(
            root in path.parents or (path == root and "::" in str(arg)) for root in plugin.roots
        ):
            shown.append(shlex.quote(str(arg)))
    if option.keyword:
        shown.append(f"-k {shlex.quote(option.keyword)}")
    if option.markexpr:
        shown.append(f"-m {shlex.quote(option.markexpr)}")
    if getattr(option, "lf", False):
        shown.append("--lf")
    shown += [f"--deselect {shlex.quote(d)}" for d in option.deselect or ()]
    if option.maxfail and (session.shouldfail or session.shouldstop):
        shown.append("-x" if option.maxfail == 1 else f"--maxfail {option.maxfail}")
    return tuple(shown) or ("pytest's selection",)
