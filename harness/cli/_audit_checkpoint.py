"""`proctor audit keygen|checkpoint` and `proctor audit verify --checkpoint`.

Exit codes: 0 clean (events appended since the checkpoint are fine); 1 when integrity is not
shown: a run truncated, deleted, rewritten or broken, a checkpoint of another log, a signature
that does not verify, or a checkpoint file that is truncated or not a checkpoint; 64 for what
the user must supply (a key, a file that exists, a place to write).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click
from tabulate import tabulate

from governance.core import SystemClock
from governance.stores import (
    CHECKPOINT_KEY_ENV,
    CHECKPOINT_PUBLIC_KEY_ENV,
    CheckpointError,
    CheckpointFileError,
    CheckpointKeyError,
    CheckpointReport,
    generate_checkpoint_keys,
    load_checkpoint_private_key,
    load_checkpoint_public_key,
    verify_checkpoint,
    write_checkpoint,
)
from harness import _exit_codes as codes
from harness.cli._audit_source import (
    AUDIT_DB,
    AuditSource,
    audit_source,
    audit_store_option,
    opened_log,
)

_FILE = click.Path(dir_okay=False, path_type=Path)


@click.command("keygen")
@click.option(
    "--key",
    "key_path",
    type=_FILE,
    required=True,
    metavar="FILE",
    help="Where to write the private (signing) key, mode 0600.",
)
@click.option(
    "--public-key",
    "public_path",
    type=_FILE,
    metavar="FILE",
    help="Where to write the public key (default: the private key's path + .pub).",
)
@click.option("--force", is_flag=True, help="Overwrite existing key files.")
def keygen_command(key_path: Path, public_path: Path | None, force: bool) -> int:
    """Create an Ed25519 key pair for signing audit checkpoints."""
    public_path = public_path or key_path.with_name(key_path.name + ".pub")
    try:
        kid = generate_checkpoint_keys(key_path, public_path, force=force)
    except CheckpointKeyError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"wrote {key_path} (private, keep it away from the audit log) and {public_path}")
    click.echo(f"key id: {kid}")
    click.echo(f"sign with:   {CHECKPOINT_KEY_ENV}={key_path} proctor audit checkpoint DB -o FILE")
    click.echo(f"verify with: proctor audit verify DB --checkpoint FILE --public-key {public_path}")
    return codes.OK


@click.command("checkpoint")
@click.argument("db", type=AUDIT_DB, required=False)
@audit_store_option
@click.option(
    "--out",
    "-o",
    "out",
    type=_FILE,
    required=True,
    metavar="FILE",
    help="The checkpoint file to write.",
)
@click.option(
    "--key",
    "key_path",
    type=_FILE,
    envvar=CHECKPOINT_KEY_ENV,
    metavar="FILE",
    help=f"The Ed25519 signing key (PEM, from `proctor audit keygen`). [env: {CHECKPOINT_KEY_ENV}]",
)
@click.option(
    "--force",
    is_flag=True,
    help="Replace FILE even when the log no longer matches it or it does not verify with this "
    "key (you give up the evidence it holds).",
)
def checkpoint_command(
    db: Path | None, store_url: str | None, out: Path, key_path: Path | None, force: bool
) -> int:
    """Sign the head, event count and last seq of every run in DB (or the store's log) into
    FILE (atomic, 0600).

    Keep FILE (or a copy) where whoever can write DB cannot: later, `proctor audit verify DB
    --checkpoint FILE` shows any run truncated, deleted or rewritten since. Exit 1 if a chain
    is already broken (a checkpoint never anchors damage), or if FILE already holds a
    checkpoint the log no longer matches, or one this key cannot verify (the old checkpoint is
    the evidence; --force replaces it anyway).
    """
    if key_path is None:
        raise click.UsageError(
            f"refusing to write an unsigned checkpoint: pass --key or set {CHECKPOINT_KEY_ENV} "
            "(create a key pair with `proctor audit keygen --key FILE`)"
        )
    try:
        private_key = load_checkpoint_private_key(key_path)
    except CheckpointKeyError as exc:
        raise click.UsageError(str(exc)) from None
    source = audit_source(db, store_url)
    with opened_log(source, writable=True) as log:
        try:
            body = write_checkpoint(
                log, out, private_key=private_key, clock=SystemClock(), replace_unverified=force
            )
        except CheckpointFileError as exc:
            raise click.UsageError(str(exc)) from None
        except CheckpointError as exc:
            click.echo(f"error: {exc}", err=True)
            return codes.CHECK_FAILED
    events = sum(run.events for run in body.runs.values())
    click.echo(
        f"wrote {out}: {body.run_count} run(s), {events} event(s), log {body.log_id}, "
        f"signed by {body.key_id} at {body.created_at}"
    )
    return codes.OK


def verify_against_checkpoint(
    source: AuditSource, checkpoint: Path, public_key_path: Path | None, *, as_json: bool
) -> int:
    """`proctor audit verify DB --checkpoint FILE`: the chains, then each run vs the checkpoint."""
    if public_key_path is None:
        raise click.UsageError(
            f"--checkpoint needs the signer's public key: pass --public-key or set "
            f"{CHECKPOINT_PUBLIC_KEY_ENV}"
        )
    if not checkpoint.is_file():
        raise click.UsageError(f"no checkpoint file {checkpoint}")
    try:
        public_key = load_checkpoint_public_key(public_key_path)
    except CheckpointKeyError as exc:
        raise click.UsageError(str(exc)) from None
    with opened_log(source) as log:
        try:
            report = verify_checkpoint(checkpoint, log, public_key)
        except CheckpointError as exc:  # the checkpoint itself cannot be trusted or read
            if as_json:
                click.echo(json.dumps({"ok": False, "problem": str(exc), "runs": []}, indent=2))
            click.echo(f"error: {exc}", err=True)
            return codes.CHECK_FAILED
    _print(report, checkpoint, as_json)
    return codes.OK if report.ok else codes.CHECK_FAILED


def _print(report: CheckpointReport, checkpoint: Path, as_json: bool) -> None:
    body = report.checkpoint
    if as_json:
        out = {
            "ok": report.ok,
            "problem": report.problem,
            "checkpoint": {
                "file": str(checkpoint),
                "log_id": body.log_id,
                "created_at": body.created_at,
                "key_id": body.key_id,
                "run_count": body.run_count,
            },
            "runs": [dataclasses.asdict(f) for f in report.findings],
        }
        click.echo(json.dumps(out, indent=2))
    else:
        click.echo(
            f"checkpoint {checkpoint}: log {body.log_id}, {body.run_count} run(s), "
            f"created {body.created_at}, signature ok ({body.key_id})"
        )
        if report.findings:
            rows = [
                [f.run_id, f.status if f.ok else f.status.upper(), f.checkpoint_events or "",
                 f.log_events, f.detail]
                for f in report.findings
            ]  # fmt: skip
            click.echo(tabulate(rows, headers=["run", "status", "at checkpoint", "now", "detail"]))
    if report.problem is not None:
        click.echo(f"error: {report.problem}", err=True)
        return
    bad = [f for f in report.findings if not f.ok]
    if bad:
        kinds = ", ".join(sorted({f.status for f in bad}))
        click.echo(f"{len(bad)} run(s) not as checkpointed ({kinds})", err=True)
    elif not as_json:
        appended = sum(f.log_events - (f.checkpoint_events or 0) for f in report.findings)
        click.echo(f"verified: nothing lost or rewritten since the checkpoint; {appended} "
                   "event(s) recorded after it")  # fmt: skip
