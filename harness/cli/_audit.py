"""`proctor audit verify|show|keygen|checkpoint`: check, read and anchor an audit log.

`verify` and `show` read a SQLite file DB or, with `--store URL` (env PROCTOR_STORE_URL), the
audit log of a store: a shared PostgreSQL database (harness.cli._audit_source). The HMAC key
comes from `PROCTOR_AUDIT_KEY`. `verify` exits 1 when any chain is broken, or,
with `--checkpoint`, when the log was truncated, a run deleted or history rewritten since the
checkpoint, or the checkpoint itself does not verify. `checkpoint` signs the head of every run
with an Ed25519 key (`PROCTOR_CHECKPOINT_KEY`); verifying needs only the public key
(`PROCTOR_CHECKPOINT_PUBLIC_KEY`). Only `checkpoint` writes to the log: the log's identity, once.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click
from tabulate import tabulate

from governance.core import GovernanceError, canonical_json
from governance.stores import AuditBackend
from harness import _exit_codes as codes
from harness.cli._audit_checkpoint import (
    checkpoint_command,
    keygen_command,
    verify_against_checkpoint,
)
from harness.cli._audit_source import (
    AUDIT_DB,
    audit_source,
    audit_store_option,
    opened_log,
)

_SUMMARY_WIDTH = 80


def _require_run(log: AuditBackend, name: str, run_id: str) -> None:
    if log.head(run_id) is not None:  # one index lookup; listing every run scans the log
        return
    runs = log.run_ids()
    if run_id not in runs:
        known = ", ".join(runs[:10]) or "none"
        raise click.BadParameter(
            f"no run {run_id!r} in {name} (runs: {known})", param_hint="'--run'"
        )


def _summary(data: object) -> str:
    text = canonical_json(data).decode("utf-8")
    return text if len(text) <= _SUMMARY_WIDTH else text[: _SUMMARY_WIDTH - 3] + "..."


@click.group("audit")
def audit() -> None:
    """Verify and read Proctor's hash-chained audit log (key: PROCTOR_AUDIT_KEY)."""


@audit.command("verify")
@click.argument("db", type=AUDIT_DB, required=False)
@audit_store_option
@click.option("--run", "run_id", metavar="ID", help="Verify only this run (default: all runs).")
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON.")
@click.option(
    "--checkpoint",
    "checkpoint",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Also compare DB with this signed checkpoint (`proctor audit checkpoint`): "
    "truncated, deleted or rewritten runs fail; events appended since are fine.",
)
@click.option(
    "--public-key",
    "public_key",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="PROCTOR_CHECKPOINT_PUBLIC_KEY",
    metavar="FILE",
    help="The checkpoint's Ed25519 public key (PEM). [env: PROCTOR_CHECKPOINT_PUBLIC_KEY]",
)
def verify_command(
    db: Path | None,
    store_url: str | None,
    run_id: str | None,
    as_json: bool,
    checkpoint: Path | None,
    public_key: Path | None,
) -> int:
    """Recompute every chain in DB (or the store's log); exit 1, naming the first bad seq, if
    any is broken. Exit 69 when the store's server cannot be reached (or dies mid-read), 3 when
    its schema is not this Proctor's."""
    source = audit_source(db, store_url)
    if checkpoint is not None:
        if run_id is not None:
            raise click.UsageError("--checkpoint covers every run; drop --run")
        return verify_against_checkpoint(source, checkpoint, public_key, as_json=as_json)
    with opened_log(source) as log:
        if run_id is not None:
            _require_run(log, source.name, run_id)
            verdicts = [log.verify(run_id)]
        else:
            verdicts = log.verify_all()
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(v) for v in verdicts], indent=2))
    elif not verdicts:
        click.echo(f"{source.name}: no audit events")
    else:
        rows = [
            [v.run_id, v.events, "ok" if v.ok else "BROKEN", v.first_bad_seq or "", v.reason or ""]
            for v in verdicts
        ]
        click.echo(tabulate(rows, headers=["run", "events", "ok", "first bad seq", "reason"]))
    broken = [v for v in verdicts if not v.ok]
    if broken and not as_json:
        click.echo(f"{len(broken)} of {len(verdicts)} chain(s) broken", err=True)
    return codes.CHECK_FAILED if broken else codes.OK


@audit.command("show")
@click.argument("db", type=AUDIT_DB, required=False)
@audit_store_option
@click.option("--run", "run_id", metavar="ID", required=True, help="The run to show.")
@click.option("--json", "as_json", is_flag=True, help="Print the events as JSON.")
def show_command(db: Path | None, store_url: str | None, run_id: str, as_json: bool) -> int:
    """Print one run's events in seq order (data is stored redacted). Exit 1 if unreadable."""
    source = audit_source(db, store_url)
    with opened_log(source) as log:
        _require_run(log, source.name, run_id)
        try:
            events = log.events(run_id)
        except GovernanceError as exc:  # a tampered row: the chain is broken, not Proctor
            click.echo(f"error: {exc}", err=True)
            return codes.CHECK_FAILED
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(e) for e in events], indent=2))
    else:
        rows = [[e.seq, e.kind, e.ts, _summary(e.data)] for e in events]
        click.echo(tabulate(rows, headers=["seq", "kind", "ts", "data"]))
    return codes.OK


audit.add_command(keygen_command)
audit.add_command(checkpoint_command)
