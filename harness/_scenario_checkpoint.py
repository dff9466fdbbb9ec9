"""Audit checkpoints inside a scenario run: the gateway signs them as the run goes, and the
last one is verified against the log once the run is over (expectation `audit_checkpoint`).

Deterministic by construction: the events and their count are the scenario's, the clock is the
scenario's manual clock, and what the trace keeps is counts and a verdict. The signing key
(made for the run) and the log's random id never reach the trace.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final

from governance import Gateway
from governance.core import GovernanceError
from harness._trace import CheckpointSummary

if TYPE_CHECKING:
    from governance.stores import CheckpointSchedule

# Small enough that a run of one governed call (four events) is checkpointed mid-run.
EVERY_EVENTS: Final = 3


def scenario_schedule(state_dir: Path) -> CheckpointSchedule:
    """Every EVERY_EVENTS events, into the scenario's state directory, with a fresh key."""
    # Imported here: checkpoints (and the `cryptography` package) load only for a scenario
    # that expects one.
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from governance.stores import CheckpointSchedule

    return CheckpointSchedule(
        state_dir / "audit.checkpoint.json",
        Ed25519PrivateKey.generate(),
        every=EVERY_EVENTS,
        on_close=False,
    )


def checkpoint_summary(gateway: Gateway) -> CheckpointSummary:
    """The last checkpoint the gateway wrote, verified with its public key against the log."""
    from governance.stores import verify_checkpoint

    writer = gateway.checkpoints
    events = sum(verdict.events for verdict in gateway.audit.verify_all())
    if writer is None or not writer.written:
        why = writer.errors[0] if writer is not None and writer.errors else "none was written"
        return CheckpointSummary(
            status="missing", checkpoints=0, checkpointed_events=0, events=events, detail=why
        )
    last = writer.written[-1]
    covered = sum(run.events for run in last.runs.values())
    schedule = writer.schedule
    detail: str | None
    try:
        report = verify_checkpoint(schedule.path, writer.inner, schedule.private_key.public_key())
    except GovernanceError as exc:
        detail = str(exc)
        ok = False
    else:
        ok = report.ok
        bad = [f"{f.run_id}: {f.status}" for f in report.findings if not f.ok]
        detail = None if ok else (report.problem or "; ".join(bad))
    return CheckpointSummary(
        status="verified" if ok else "not_verified",
        checkpoints=len(writer.written),
        checkpointed_events=covered,
        events=events,
        detail=detail,
    )
