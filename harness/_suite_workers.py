"""A suite's scenarios run in suite order: in this process, or in `-j` worker processes.

Workers are forked from the parent when the parent has a single thread: they start with its
imports and its loaded scenarios, with nothing to import or unpickle (a spawned worker paid
~0.5 s of imports and unpickled every scenario it ran). Fork is safe only when no other thread
can hold a lock at the moment of the fork, so the parent checks that it has exactly one thread
(a -j parent starts no MCP server, event loop or pool thread before its workers: the executor
forks every worker before starting its own manager thread), and flushes its standard streams
first (a child must not write the parent's buffered bytes again). Each worker builds its own
`SuiteCache`; nothing of the parent's scratch or stores is used in a child. With a second
thread alive the workers come from a forkserver that imported this module once.

With a trace directory each worker writes its traces' files itself and sends back only what
the run keeps of each (`WrittenTrace`), so a trace is serialised once, where it ran. A worker
that dies fails the run naming every scenario left without a trace: nothing is dropped silently.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import multiprocessing.util
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from harness._errors import HarnessError
from harness._scenario_load import LoadedScenario, resolve_mcp_config
from harness._scenario_runner import ProviderChoice, run_scenario
from harness._source_scores import PolicyUses, score_at_source
from harness._suite_cache import SuiteCache
from harness._telemetry import TelemetryPlan
from harness._trace import Trace
from harness._trace_store import StoredTraces, WrittenTrace, write_trace

if TYPE_CHECKING:
    from governance.telemetry import Telemetry

_MAX_CHUNK = 32
_NAMED_LOST = 10
# How far ahead of the running scenario its successors are read: their MCP servers start (a
# ~0.5 s boot) while the scenarios before them run; the window holds them already unpacked.
_LOOKAHEAD = 128


class Finished(Protocol):
    """What progress is told of each finished scenario (a `Trace` or a `WrittenTrace`)."""

    @property
    def scenario_id(self) -> str: ...

    @property
    def status(self) -> str: ...


Progress = Callable[[int, int, Finished], None]


def run_suite(
    scenarios: Sequence[LoadedScenario],
    *,
    run_id: str,
    provider: ProviderChoice,
    jobs: int = 1,
    progress: Progress | None = None,
    store: StoredTraces | None = None,
    telemetry: Telemetry | None = None,
) -> Sequence[Trace]:
    """Every scenario, in suite order; `jobs > 1` runs them in separate processes.

    With `store`, each trace goes to its file as its scenario finishes and none is kept in
    memory: the store is returned (it reads them back one at a time). With `telemetry`
    (--otel), it observes a serial run; each -j worker starts the same export of its own.
    """
    traces: list[Trace] = []
    finished = (
        _serial(scenarios, run_id, provider, store, telemetry)
        if jobs <= 1
        else _parallel(scenarios, run_id, provider, jobs, store, telemetry)
    )
    done = 0
    for item in finished:
        if isinstance(item, WrittenTrace):
            assert store is not None  # workers write files only into a store's directory
            store.adopt(item)
        elif store is not None:
            store.add(item)
        else:
            traces.append(item)
        done += 1
        if progress:
            progress(done, len(scenarios), item)
    if done != len(scenarios):  # a bug, not a scenario failure: never score a partial run
        raise HarnessError(f"the run ended with {done} traces for {len(scenarios)} scenarios")
    return store if store is not None else traces


def mcp_configs(scenarios: Iterable[LoadedScenario]) -> list[Path]:
    """The distinct MCP config files the scenarios run with, first use first."""
    found: dict[Path, None] = {}
    for loaded in scenarios:
        config = resolve_mcp_config(loaded)
        if config is not None:
            found.setdefault(config)
    return list(found)


def _serial(
    scenarios: Sequence[LoadedScenario],
    run_id: str,
    provider: ProviderChoice,
    store: StoredTraces | None,
    telemetry: Telemetry | None = None,
) -> Iterator[Trace | WrittenTrace]:
    cache = SuiteCache()
    uses = PolicyUses() if store is not None and store.scores is not None else None
    try:
        for loaded in read_ahead(scenarios, cache):
            trace = run_scenario(
                loaded, run_id=run_id, provider=provider, cache=cache, telemetry=telemetry
            )
            if store is None or uses is None:
                yield trace
            else:
                yield _written(store.directory, store.name_of, loaded, trace, uses)
    finally:
        cache.close_in_background()  # scoring starts while the servers exit


def _written(
    directory: Path,
    name_of: Callable[[str], str | None],
    loaded: LoadedScenario,
    trace: Trace,
    uses: PolicyUses | None,
) -> WrittenTrace:
    """`trace` written to its file in `directory`, scored here when `uses` is given."""
    name = name_of(trace.scenario_id)
    if name is None:
        raise HarnessError(f"scenario {trace.scenario_id!r} has no trace file name in this run")
    score = score_at_source(loaded, trace, uses) if uses is not None else None
    return write_trace(directory / name, trace, score)


def read_ahead(
    scenarios: Iterable[LoadedScenario], cache: SuiteCache, window: int = _LOOKAHEAD
) -> Iterator[LoadedScenario]:
    """The scenarios in order, each read from the suite and unpacked once (was twice: a pass
    for the MCP configs, then the run), `window` scenarios ahead of the one handed out. The
    stateless MCP servers of a scenario start (not waited for) when it enters the window, so
    they boot on another core while the scenarios before it run; a suite no longer than the
    window starts them all before its first scenario."""
    items = iter(scenarios)
    ahead: deque[LoadedScenario] = deque()
    offered: set[Path] = set()  # each config is offered once, as a whole-suite pass did

    def take(count: int) -> None:
        taken = [_unpacked(loaded) for _, loaded in zip(range(count), items, strict=False)]
        ahead.extend(taken)
        configs = [config for config in mcp_configs(taken) if config not in offered]
        if configs:
            offered.update(configs)
            cache.prestart_mcp(configs)

    take(window)
    while ahead:
        yield ahead.popleft()
        take(1)


def _unpacked(loaded: LoadedScenario) -> LoadedScenario:
    """`loaded` holding its model (one unpack for every use in the run)."""
    return loaded if not isinstance(loaded.form, bytes) else replace(loaded, form=loaded.scenario)


@dataclass(frozen=True, slots=True)
class _Work:
    """What a worker needs for the whole run; inherited by a forked worker, not pickled."""

    scenarios: Sequence[LoadedScenario]
    run_id: str
    provider: ProviderChoice
    directory: Path | None  # the store's: the worker writes the trace files there
    name_of: Callable[[str], str | None]  # scenario id -> trace file name in `directory`
    score: bool  # the worker scores each trace it writes (harness._source_scores)
    telemetry: TelemetryPlan | None = None  # --otel: the worker exports its own spans


@dataclass(frozen=True, slots=True)
class _Worker:
    work: _Work
    cache: SuiteCache
    uses: PolicyUses | None
    telemetry: Telemetry | None


_WORKER: _Worker | None = None


def _start_worker(work: _Work) -> None:
    global _WORKER
    cache = SuiteCache()
    # Finalizers run when the worker exits normally (fork, forkserver or spawn), before its
    # os._exit: its MCP servers stop and, first, its spans are flushed (bounded by a timeout).
    multiprocessing.util.Finalize(None, cache.close, exitpriority=10)
    telemetry = work.telemetry.start() if work.telemetry is not None else None
    if telemetry is not None:
        multiprocessing.util.Finalize(None, telemetry.shutdown, exitpriority=20)
    _WORKER = _Worker(work, cache, PolicyUses() if work.score else None, telemetry)


def _run_chunk(span: tuple[int, int]) -> list[WrittenTrace] | list[str]:
    """A worker's unit of work: scenarios `span` of the suite; each trace written to its file
    (a `WrittenTrace` back), or without a directory its JSON back."""
    worker = _WORKER
    assert worker is not None, "a -j worker runs _start_worker first"
    work, cache, uses = worker.work, worker.cache, worker.uses
    written: list[WrittenTrace] = []
    raw: list[str] = []
    for index in range(*span):
        loaded = work.scenarios[index]
        trace = run_scenario(
            loaded,
            run_id=work.run_id,
            provider=work.provider,
            cache=cache,
            telemetry=worker.telemetry,
        )
        if work.directory is None:
            raw.append(trace.model_dump_json())
            continue
        written.append(_written(work.directory, work.name_of, loaded, trace, uses))
    return raw if work.directory is None else written


def worker_context() -> multiprocessing.context.BaseContext:
    """fork when this process has one thread (see the module docstring), else a forkserver
    that preloads the run path, else (no fork on this platform) spawn."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])
        return context
    return multiprocessing.get_context("spawn")


def _parallel(
    scenarios: Sequence[LoadedScenario],
    run_id: str,
    provider: ProviderChoice,
    jobs: int,
    store: StoredTraces | None,
    telemetry: Telemetry | None = None,
) -> Iterator[Trace | WrittenTrace]:
    context = worker_context()
    name_of: Callable[[str], str | None] = _no_name
    if store is not None:
        # A forked worker asks the store it inherits; nothing is read per scenario here, before
        # the workers start (that was every scenario unpacked in this process, serially).
        name_of = store.name_of
    if context.get_start_method() != "fork":
        # A forkserver or spawned worker gets the scenarios pickled: as a list (a suite spilled
        # to disk holds an open file, which does not pickle; a forked worker shares it), and the
        # names as a dict.
        scenarios = list(scenarios)
        if store is not None:
            names = {sid: store.name_of(sid) for sid in (s.scenario_id for s in scenarios)}
            name_of = names.get
    directory = store.directory if store is not None else None  # an empty store is falsy
    score = store is not None and store.scores is not None
    # Each worker exports its own spans: the parent's telemetry saw nothing and started no thread.
    plan = TelemetryPlan.of(telemetry) if telemetry is not None else None
    work = _Work(scenarios, run_id, provider, directory, name_of, score, plan)
    spans = chunk_spans(len(scenarios), jobs)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    done = 0
    with ProcessPoolExecutor(
        max_workers=jobs, mp_context=context, initializer=_start_worker, initargs=(work,)
    ) as pool:
        try:
            for chunk in pool.map(_run_chunk, spans):
                for item in chunk:
                    done += 1
                    yield (
                        item if isinstance(item, WrittenTrace) else Trace.model_validate_json(item)
                    )
        except BrokenProcessPool:
            raise HarnessError(_lost_message(scenarios, done)) from None


def _no_name(scenario_id: str) -> str | None:
    return None


def chunk_spans(count: int, jobs: int) -> list[tuple[int, int]]:
    """The suite cut into chunks for `jobs` workers: a round trip per chunk, not per scenario,
    and chunks that shrink toward the end (an eighth of what is left per worker, at most
    `_MAX_CHUNK`, down to one scenario), so no worker sits idle while another runs a long last
    chunk."""
    spans: list[tuple[int, int]] = []
    start = 0
    while start < count:
        size = max(1, min(_MAX_CHUNK, (count - start) // (jobs * 8)))
        spans.append((start, start + size))
        start += size
    return spans


def _lost_message(scenarios: Sequence[LoadedScenario], done: int) -> str:
    lost = [loaded.scenario_id for loaded in scenarios[done:]]
    named = ", ".join(lost[:_NAMED_LOST])
    more = f" and {len(lost) - _NAMED_LOST} more" if len(lost) > _NAMED_LOST else ""
    return (
        f"a -j worker process died (killed, or crashed without a Python error) while the suite "
        f"ran; {len(lost)} of {len(scenarios)} scenarios have no trace: {named}{more}. Nothing "
        "was scored; re-run, or run with -j 1 to see which scenario brings the process down"
    )
