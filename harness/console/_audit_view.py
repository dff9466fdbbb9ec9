"""What the Audit page shows, read from the gateway's audit log (any backend: SQLite, memory,
PostgreSQL) through its own reader and verifier, the ones `proctor audit show|verify` use.

Outcomes: what became of each call, named from the events the firewall writes
(governance._firewall, governance._approval_flow). Filtering by an outcome keeps every event of
the calls that had it (a blocked call's request, decision and all), so a call reads whole.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from governance.core import GovernanceError
from governance.stores import AuditBackend, AuditEvent, ChainVerdict

# Event kind -> the outcome it records; `policy.decided` records its decision's effect.
_OUTCOME_OF_KIND: Mapping[str, str] = {
    "execution.completed": "executed",
    "execution.failed": "failed",
    "call.rejected": "rejected",
    "budget.denied": "budget_denied",
    "approval.unavailable": "approval_unavailable",
    "approval.approved": "approved",
    "approval.rejected": "reviewer_rejected",
    "approval.edit_refused": "edit_refused",
    "approval.refused": "approval_refused",
    "approval.revoked": "revoked",
    "approval.cancelled": "cancelled",
    "approval.expired": "expired",
}
DECISIONS = ("allow", "require_approval", "block")
OUTCOMES = (*DECISIONS, *dict.fromkeys(_OUTCOME_OF_KIND.values()))
RUNS_SHOWN = 200  # the most recent runs listed; the rest are counted, not shown
EVENTS_PER_PAGE = 200


class UnknownOutcome(ValueError):
    """An outcome filter naming none of OUTCOMES."""


@dataclass(frozen=True, slots=True)
class AuditFilter:
    run: str = ""  # part of a run id
    tool: str = ""  # a tool name, exactly
    outcome: str = ""  # one of OUTCOMES

    def __post_init__(self) -> None:
        if self.outcome and self.outcome not in OUTCOMES:
            raise UnknownOutcome(
                f"unknown outcome {self.outcome!r}: use one of {', '.join(OUTCOMES)}"
            )

    @property
    def active(self) -> bool:
        return bool(self.run or self.tool or self.outcome)

    def keeps_run(self, run_id: str) -> bool:
        return self.run in run_id

    def events(self, events: Sequence[AuditEvent]) -> list[AuditEvent]:
        """The events this filter keeps, in their order."""
        kept = list(events)
        if self.tool:
            kept = [e for e in kept if e.data.get("tool") == self.tool]
        if self.outcome:
            calls = _calls_with(events, self.outcome)
            kept = [e for e in kept if _call_id(e) in calls]
        return kept


@dataclass(frozen=True, slots=True)
class RunRow:
    run_id: str
    events: int
    matching: int  # events the filter keeps (all of them with no filter)
    first_ts: str | None
    last_ts: str | None
    verdict: ChainVerdict | None
    tools: tuple[str, ...]
    outcomes: tuple[str, ...]
    unreadable: str | None = None  # why its events could not be read (a tampered row)


@dataclass(frozen=True, slots=True)
class RunsListing:
    rows: list[RunRow]
    total_runs: int  # runs on the log
    matching_runs: int  # runs the filter keeps, before the RUNS_SHOWN cap
    tools: list[str] = field(default_factory=list)  # every tool seen: the filter's choices


@dataclass(frozen=True, slots=True)
class EventRow:
    seq: int
    kind: str
    ts: str
    tool: str | None
    call_id: str | None
    outcome: str | None
    data: str  # the stored (redacted) data as indented JSON


@dataclass(frozen=True, slots=True)
class RunEvents:
    run_id: str
    total: int  # events on the run
    matching: int  # events the filter keeps
    offset: int
    rows: list[EventRow]
    verdict: ChainVerdict
    unreadable: str | None = None
    tools: tuple[str, ...] = ()  # every tool the run called: the filter's choices


def outcome_of(event: AuditEvent) -> str | None:
    if event.kind == "policy.decided":
        effect = event.data.get("effect")
        return effect if isinstance(effect, str) and effect in DECISIONS else None
    return _OUTCOME_OF_KIND.get(event.kind)


def _call_id(event: AuditEvent) -> str | None:
    value = event.data.get("call_id")
    return value if isinstance(value, str) else None


def _calls_with(events: Sequence[AuditEvent], outcome: str) -> set[str]:
    return {call for e in events if outcome_of(e) == outcome and (call := _call_id(e)) is not None}


def _tool(event: AuditEvent) -> str | None:
    value = event.data.get("tool")
    return value if isinstance(value, str) else None


def list_runs(log: AuditBackend, wanted: AuditFilter) -> RunsListing:
    """Every run on the log with its chain's verdict (the CLI's verifier), newest first."""
    verdicts = {v.run_id: v for v in log.verify_all()}
    run_ids = log.run_ids()
    rows: list[RunRow] = []
    tools: set[str] = set()
    for run_id in run_ids:
        try:
            events = log.events(run_id)
        except GovernanceError as exc:  # a row whose data is not JSON: the chain is broken
            if wanted.keeps_run(run_id) and not (wanted.tool or wanted.outcome):
                rows.append(
                    RunRow(run_id, 0, 0, None, None, verdicts.get(run_id), (), (), str(exc))
                )
            continue
        run_tools = {t for e in events if (t := _tool(e)) is not None}
        tools |= run_tools
        if not wanted.keeps_run(run_id):
            continue
        kept = wanted.events(events)
        if (wanted.tool or wanted.outcome) and not kept:
            continue
        rows.append(
            RunRow(
                run_id=run_id,
                events=len(events),
                matching=len(kept),
                first_ts=events[0].ts if events else None,
                last_ts=events[-1].ts if events else None,
                verdict=verdicts.get(run_id),
                tools=tuple(sorted(run_tools)),
                outcomes=tuple(sorted({o for e in events if (o := outcome_of(e)) is not None})),
            )
        )
    rows.sort(key=lambda r: (r.last_ts or "", r.run_id), reverse=True)
    return RunsListing(
        rows=rows[:RUNS_SHOWN],
        total_runs=len(run_ids),
        matching_runs=len(rows),
        tools=sorted(tools),
    )


def run_events(log: AuditBackend, run_id: str, wanted: AuditFilter, offset: int) -> RunEvents:
    """One page of a run's events in seq order; KeyError when the log has no such run."""
    if log.head(run_id) is None:
        raise KeyError(run_id)
    verdict = log.verify(run_id)
    try:
        events = log.events(run_id)
    except GovernanceError as exc:
        return RunEvents(run_id, verdict.events, 0, 0, [], verdict, str(exc))
    kept = wanted.events(events)
    offset = max(0, min(offset, max(len(kept) - 1, 0)))
    page = kept[offset : offset + EVENTS_PER_PAGE]
    return RunEvents(
        run_id=run_id,
        total=len(events),
        matching=len(kept),
        offset=offset,
        rows=[_row(e) for e in page],
        verdict=verdict,
        tools=tuple(sorted({t for e in events if (t := _tool(e)) is not None})),
    )


def verify(log: AuditBackend, run_id: str | None) -> list[ChainVerdict]:
    """The verdicts `proctor audit verify [--run ID]` prints; KeyError for an unknown run."""
    if run_id is None:
        return log.verify_all()
    if log.head(run_id) is None:
        raise KeyError(run_id)
    return [log.verify(run_id)]


def _row(event: AuditEvent) -> EventRow:
    return EventRow(
        seq=event.seq,
        kind=event.kind,
        ts=event.ts,
        tool=_tool(event),
        call_id=_call_id(event),
        outcome=outcome_of(event),
        data=_shown(event.data),
    )


def _shown(data: Mapping[str, Any]) -> str:
    # call_id and tool have their own columns.
    rest = {k: v for k, v in data.items() if k not in ("call_id", "tool")}
    return json.dumps(rest, indent=2, sort_keys=True, ensure_ascii=False, default=str)
