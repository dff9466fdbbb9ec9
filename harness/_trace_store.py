"""A run's traces on disk: each written as its scenario finishes, read back one at a time.

Memory stays flat however big the suite: what is kept per scenario in memory is its position
under its id; its digest and summary facts go to a `Spill` on disk; scoring, coverage, the gate
and the reports read each trace from its file when they reach it. The files are the trace files
the reports directory holds (`traces/<id>.json`, each trace's canonical bytes), so nothing is
written twice.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, overload

from harness._errors import HarnessError
from harness._spill import Spill
from harness._trace import Trace

_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}")


def trace_filenames(scenario_ids: list[str]) -> dict[str, str]:
    """Scenario id -> `<id>.json`; an id unsafe as a file name (or equal to another but for case,
    which collides on macOS/Windows) gets a sanitised name plus a short digest of the id."""
    if len(set(scenario_ids)) != len(scenario_ids):
        dupes = sorted(k for k, n in Counter(scenario_ids).items() if n > 1)
        raise HarnessError(f"two traces share a scenario id: {', '.join(dupes)}")
    folded = Counter(sid.casefold() for sid in scenario_ids)
    names = {}
    for sid in scenario_ids:
        if _SAFE.fullmatch(sid) and folded[sid.casefold()] == 1:
            names[sid] = f"{sid}.json"
        else:
            stem = re.sub(r"[^A-Za-z0-9._-]", "_", sid).lstrip("._-")[:80] or "scenario"
            names[sid] = f"{stem}-{hashlib.sha256(sid.encode()).hexdigest()[:10]}.json"
    return names


@dataclass(frozen=True, slots=True)
class TraceFacts:
    """What the summary reports (report.json, junit.xml) show of a trace: kept as it is stored,
    so those reports never parse the trace file again."""

    status: str
    termination: str | None
    digest: str
    tags: tuple[str, ...]
    turns: int
    tool_outcomes: tuple[tuple[str, int], ...]  # outcome -> tool calls, first seen first

    @classmethod
    def of(cls, trace: Trace, digest: str | None = None) -> TraceFacts:
        outcomes: dict[str, int] = {}
        for span in trace.tool_spans:
            outcomes[span.outcome] = outcomes.get(span.outcome, 0) + 1
        return cls(
            status=trace.status,
            termination=trace.termination,
            digest=trace.digest if digest is None else digest,
            tags=tuple(trace.tags),
            turns=trace.turns,
            tool_outcomes=tuple(outcomes.items()),
        )


@dataclass(frozen=True, slots=True)
class WrittenTrace:
    """A trace as its file was written: what the run keeps of it (small enough to cross a
    process boundary, so a -j worker writes the file and sends only this)."""

    scenario_id: str
    facts: TraceFacts
    provider: dict[str, Any]
    live: bool
    # Its score where it was written (a harness._source_scores.SourceScore; opaque here).
    score: Any = None

    @property
    def status(self) -> str:
        return self.facts.status


def write_trace(path: Path, trace: Trace, score: Any = None) -> WrittenTrace:
    """Write `trace`'s canonical bytes to `path`; what a `StoredTraces` keeps of it."""
    raw, digest = trace.canonical_with_digest()  # one dump for the file and its digest
    path.write_bytes(raw)
    return WrittenTrace(
        scenario_id=trace.scenario_id,
        facts=TraceFacts.of(trace, digest),
        provider=trace.provider.model_dump(mode="json"),
        live=trace.provider.live,
        score=score,
    )


def provider_records(traces: Sequence[Trace]) -> list[dict[str, Any]]:
    """Each distinct provider record (name, model, live) in trace order."""
    if isinstance(traces, StoredTraces):
        return [dict(record) for record in traces.providers]
    seen: list[dict[str, Any]] = []
    for trace in traces:
        record = trace.provider.model_dump(mode="json")
        if record not in seen:
            seen.append(record)
    return seen


class ScoreSink(Protocol):
    """Where a run that scores each trace as it is written keeps the scores
    (harness._source_scores.SourceScores)."""

    def add(self, scenario_id: str, score: Any) -> None: ...


class StoredTraces(Sequence[Trace]):
    """Traces in the order they were added, each loaded from its file when asked for."""

    def __init__(self, directory: Path, names: Mapping[str, str]) -> None:
        """`names`: scenario id -> file name in `directory`, for every scenario that may run
        (kept as given: a big suite passes a mapping that computes them)."""
        self.directory = directory
        self._names = names
        self._stored: Spill[tuple[str, TraceFacts]] = Spill()  # (id, facts) in trace order
        self.providers: list[dict[str, Any]] = []  # distinct, in trace order
        self.live = False  # whether any trace came from a live provider
        # Set by a run that scores each trace where it is written: every trace's score, in
        # trace order (a trace stored without one leaves it short, and scoring reads the files).
        self.scores: ScoreSink | None = None
        directory.mkdir(parents=True, exist_ok=True)

    def add(self, trace: Trace) -> None:
        name = self._names.get(trace.scenario_id)
        if name is None:
            raise HarnessError(f"scenario {trace.scenario_id!r} has no trace file name in this run")
        if trace.scenario_id in self._stored:
            raise HarnessError(f"two traces share a scenario id: {trace.scenario_id}")
        self.adopt(write_trace(self.directory / name, trace))

    def name_of(self, scenario_id: str) -> str | None:
        """The file name the trace of `scenario_id` goes to (a -j worker writes it there)."""
        return self._names.get(scenario_id)

    def adopt(self, written: WrittenTrace) -> None:
        """Take in a trace already written to its file (by `add`, or by a -j worker)."""
        sid = written.scenario_id
        if sid in self._stored:
            raise HarnessError(f"two traces share a scenario id: {sid}")
        if sid not in self._names:
            raise HarnessError(f"scenario {sid!r} has no trace file name in this run")
        self._stored.append((sid, written.facts), key=sid)
        if self.scores is not None and written.score is not None:
            self.scores.add(sid, written.score)
        if written.provider not in self.providers:
            self.providers.append(dict(written.provider))
        self.live = self.live or written.live

    def facts(self, scenario_id: str) -> TraceFacts | None:
        found = self._stored.get(scenario_id)
        return None if found is None else found[1]

    def position(self, scenario_id: str) -> int | None:
        """The trace's place in the run (from 0), None when the scenario has no trace."""
        return self._stored.position(scenario_id)

    def path_of(self, scenario_id: str) -> Path:
        return self.directory / self._names[scenario_id]

    def canonical(self, scenario_id: str) -> bytes | None:
        """The trace file's bytes (its canonical JSON), unparsed; None when the scenario has no
        trace."""
        if scenario_id not in self._stored:
            return None
        return self.path_of(scenario_id).read_bytes()

    def get(self, scenario_id: str) -> Trace | None:
        if scenario_id not in self._stored:
            return None
        return Trace.model_validate_json(self.path_of(scenario_id).read_bytes())

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(self._stored.keys())

    @property
    def digests(self) -> Mapping[str, str]:
        return {sid: facts.digest for sid, facts in self._stored}

    def __len__(self) -> int:
        return len(self._stored)

    @overload
    def __getitem__(self, index: int) -> Trace: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Trace]: ...

    def __getitem__(self, index: int | slice) -> Trace | Sequence[Trace]:
        if isinstance(index, slice):
            return [self._load(self._stored.at(n)[0]) for n in range(len(self))[index]]
        return self._load(self._stored.at(range(len(self))[index])[0])

    def __iter__(self) -> Iterator[Trace]:
        for n in range(len(self)):  # not the spill's iterator: a trace may be added meanwhile
            yield self._load(self._stored.at(n)[0])

    def _load(self, scenario_id: str) -> Trace:
        return Trace.model_validate_json(self.path_of(scenario_id).read_bytes())


class LazyStableTraces(Mapping[str, Mapping[str, object]]):
    """scenario id -> the trace's stable form, read from its file only when a diff needs it."""

    def __init__(self, traces: Sequence[Trace]) -> None:
        self._traces = traces
        self._ids = (
            traces.ids if isinstance(traces, StoredTraces) else tuple(t.scenario_id for t in traces)
        )

    def __getitem__(self, scenario_id: str) -> Mapping[str, object]:
        if isinstance(self._traces, StoredTraces):
            trace = self._traces.get(scenario_id)
        else:
            trace = next((t for t in self._traces if t.scenario_id == scenario_id), None)
        if trace is None:
            raise KeyError(scenario_id)
        return trace.stable_dict()

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)
