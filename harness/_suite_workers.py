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
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from harness._errors import HarnessError
from harness._scenario_load import LoadedScenario, resolve_mcp_config
from harness._scenario_runner import ProviderChoice, run_scenario
from harness._suite_cache import SuiteCache
from harness._trace import Trace
from harness._trace_store import StoredTraces, WrittenTrace, write_trace

_MAX_CHUNK = 32
_NAMED_LOST = 10


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
) -> Sequence[Trace]:
    """Every scenario, in suite order; `jobs > 1` runs them in separate processes.

    With `store`, each trace goes to its file as its scenario finishes and none is kept in
    memory: the store is returned (it reads them back one at a time).
    """
    traces: list[Trace] = []
    finished = (
        _serial(scenarios, run_id, provider)
        if jobs <= 1
        else _parallel(scenarios, run_id, provider, jobs, store)
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


def mcp_configs(scenarios: Sequence[LoadedScenario]) -> list[Path]:
    """The distinct MCP config files the scenarios run with, first use first."""
    found: dict[Path, None] = {}
    for loaded in scenarios:
        config = resolve_mcp_config(loaded)
        if config is not None:
            found.setdefault(config)
    return list(found)


def _serial(
    scenarios: Sequence[LoadedScenario], run_id: str, provider: ProviderChoice
) -> Iterator[Trace]:
    cache = SuiteCache()
    try:
        # The shared MCP servers boot on another core while the scenarios before theirs run.
        cache.prestart_mcp(mcp_configs(scenarios))
        for loaded in scenarios:
            yield run_scenario(loaded, run_id=run_id, provider=provider, cache=cache)
    finally:
        cache.close_in_background()  # scoring starts while the servers exit


@dataclass(frozen=True, slots=True)
class _Work:
    """What a worker needs for the whole run; inherited by a forked worker, not pickled."""

    scenarios: Sequence[LoadedScenario]
    run_id: str
    provider: ProviderChoice
    directory: Path | None  # the store's: the worker writes the trace files there
    names: Mapping[str, str]  # scenario id -> trace file name in `directory`


_WORKER: tuple[_Work, SuiteCache] | None = None


def _start_worker(work: _Work) -> None:
    global _WORKER
    cache = SuiteCache()
    # Runs when the worker exits normally (fork, forkserver or spawn): its MCP servers stop.
    multiprocessing.util.Finalize(None, cache.close, exitpriority=10)
    _WORKER = (work, cache)


def _run_chunk(span: tuple[int, int]) -> list[WrittenTrace] | list[str]:
    """A worker's unit of work: scenarios `span` of the suite; each trace written to its file
    (a `WrittenTrace` back), or without a directory its JSON back."""
    assert _WORKER is not None, "a -j worker runs _start_worker first"
    work, cache = _WORKER
    written: list[WrittenTrace] = []
    raw: list[str] = []
    for index in range(*span):
        trace = run_scenario(
            work.scenarios[index], run_id=work.run_id, provider=work.provider, cache=cache
        )
        if work.directory is None:
            raw.append(trace.model_dump_json())
        else:
            written.append(write_trace(work.directory / work.names[trace.scenario_id], trace))
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
) -> Iterator[Trace | WrittenTrace]:
    names: dict[str, str] = {}
    if store is not None:
        for loaded in scenarios:
            sid = loaded.scenario.id
            name = store.name_of(sid)
            if name is None:
                raise HarnessError(f"scenario {sid!r} has no trace file name in this run")
            names[sid] = name
    context = worker_context()
    if context.get_start_method() != "fork":
        # A forkserver or spawned worker gets the scenarios pickled: as a list (a suite spilled
        # to disk holds an open file, which does not pickle; a forked worker shares it).
        scenarios = list(scenarios)
    work = _Work(scenarios, run_id, provider, store.directory if store else None, names)
    # Chunks keep the round trips down and still spread the tail over the workers.
    size = max(1, min(_MAX_CHUNK, len(scenarios) // (jobs * 8)))
    spans = [(start, min(start + size, len(scenarios))) for start in range(0, len(scenarios), size)]
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
                    yield item if isinstance(item, WrittenTrace) else Trace.model_validate_json(
                        item
                    )
        except BrokenProcessPool:
            raise HarnessError(_lost_message(scenarios, done)) from None


def _lost_message(scenarios: Sequence[LoadedScenario], done: int) -> str:
    lost = [loaded.scenario.id for loaded in scenarios[done:]]
    named = ", ".join(lost[:_NAMED_LOST])
    more = f" and {len(lost) - _NAMED_LOST} more" if len(lost) > _NAMED_LOST else ""
    return (
        f"a -j worker process died (killed, or crashed without a Python error) while the suite "
        f"ran; {len(lost)} of {len(scenarios)} scenarios have no trace: {named}{more}. Nothing "
        "was scored; re-run, or run with -j 1 to see which scenario brings the process down"
    )
