"""`proctor approvals`: list, show, approve (optionally edited), reject held calls; resume runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from tabulate import tabulate

from governance import EditRefused
from governance.stores import APPROVAL_STATUSES, ApprovalError, ApprovalNotFound, ApprovalRequest
from harness import _exit_codes as codes
from harness._approval_review import (
    approve,
    current_requests,
    edit_value,
    request_json,
    resume_hint,
)
from harness._run_store import RunNotFound, RunStore
from harness.cli._options import gateway_options, open_gateway
from harness.cli._otel import otel_option
from harness.cli._single_run import print_run, resume_stored_run

if TYPE_CHECKING:
    from governance.telemetry import Telemetry


def _parse_set(pairs: tuple[str, ...]) -> dict[str, Any]:
    edits: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--set")
        edits[key] = edit_value(raw)  # a bare word is a string
    return edits


@click.group("approvals")
def approvals() -> None:
    """Review calls held for human approval, then resume the runs that wait on them."""


@approvals.command("list")
@gateway_options
@click.option("--status", type=click.Choice(APPROVAL_STATUSES), default=None)
@click.option("--run", "run_id", default=None, help="Only this run's requests.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_command(
    state_dir: Path, policy_path: Path | None, status: Any, run_id: str | None, as_json: bool
) -> int:
    """List approval requests (pending ones first in line to expire).

    Requests a crash left in doubt (their state and the audit chain disagreed) are flagged;
    the ones found at this start-up are also named on stderr.
    """
    with open_gateway(state_dir, policy_path) as gateway:
        requests = current_requests(gateway.approvals, status=status, run_id=run_id)
        for finding in gateway.in_doubt:
            click.echo(f"in doubt after a crash: {finding.describe()}", err=True)
    if as_json:
        click.echo(json.dumps([request_json(r) for r in requests], indent=2))
        return codes.OK
    if not requests:
        click.echo("no approval requests")
        return codes.OK
    rows = [
        [
            r.id,
            r.state,
            r.tool,
            r.risk,
            r.actor,
            r.run_id,
            r.expires_at.isoformat(timespec="seconds"),
            f"IN DOUBT: {r.in_doubt}" if r.in_doubt else "",
        ]
        for r in requests
    ]
    headers = ["id", "state", "tool", "risk", "actor", "run", "expires", "note"]
    click.echo(tabulate(rows, headers=headers))
    return codes.OK


@approvals.command("show")
@gateway_options
@click.argument("approval_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show_command(state_dir: Path, policy_path: Path | None, approval_id: str, as_json: bool) -> int:
    """Show one request: the exact call, who proposed it, which rules held it."""
    with open_gateway(state_dir, policy_path) as gateway:
        gateway.approvals.expire_due()
        request = _get(gateway.approvals, approval_id)
    data = request_json(request)
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        for key, value in data.items():
            shown = json.dumps(value) if isinstance(value, dict | list) else value
            click.echo(f"{key:>18}: {shown}")
    return codes.OK


@approvals.command("approve")
@gateway_options
@click.argument("approval_id")
@click.option("--reviewer", required=True, help="Who approves (never the proposing actor).")
@click.option(
    "--set",
    "edits",
    multiple=True,
    metavar="KEY=VALUE",
    help="Edit an argument before approving (JSON value or bare string); repeatable. "
    "The edit is re-evaluated and refused if policy blocks it or it raises the risk.",
)
@click.option("--comment", default=None)
def approve_command(
    state_dir: Path,
    policy_path: Path | None,
    approval_id: str,
    reviewer: str,
    edits: tuple[str, ...],
    comment: str | None,
) -> int:
    """Approve a held call. It executes when its run is resumed, once, after a policy re-check."""
    changes = _parse_set(edits)
    with open_gateway(state_dir, policy_path) as gateway:
        try:
            approved = approve(gateway, approval_id, reviewer, edits=changes, comment=comment)
        except ApprovalNotFound as exc:
            raise click.BadParameter(str(exc), param_hint="APPROVAL_ID") from None
        except EditRefused as exc:
            click.echo(f"edit refused ({exc.reason}): {exc}; the request stays pending", err=True)
            return codes.CHECK_FAILED
        except ApprovalError as exc:
            click.echo(f"not approved: {exc}", err=True)
            return codes.CHECK_FAILED
    click.echo(f"{approved.id} approved by {reviewer}" + (" (edited)" if changes else ""))
    if approved.waiter is not None:
        # An awaited request (`proctor ask --wait`): only the waiting process can resume it
        # (it keeps the run in memory); if that process is gone, the approval expires at the
        # next start, audited, and the call must be asked again.
        click.echo(
            f"run {approved.run_id} is awaited by a waiting `proctor ask --wait`: that process "
            "resumes it; if it has stopped, this approval expires at the next start"
        )
    else:
        click.echo(resume_hint(state_dir, approved))
    return codes.OK


@approvals.command("reject")
@gateway_options
@click.argument("approval_id")
@click.option("--reviewer", required=True)
@click.option("--comment", required=True, help="Why: the agent is told.")
def reject_command(
    state_dir: Path, policy_path: Path | None, approval_id: str, reviewer: str, comment: str
) -> int:
    """Reject a held call. Its run, when resumed, gets the refusal as the call's result."""
    with open_gateway(state_dir, policy_path) as gateway:
        try:
            rejected = gateway.firewall.reject(approval_id, reviewer, comment=comment)
        except ApprovalError as exc:
            click.echo(f"not rejected: {exc}", err=True)
            return codes.CHECK_FAILED
    click.echo(f"{rejected.id} rejected by {reviewer}")
    return codes.OK


@approvals.command("resume")
@gateway_options
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON.")
@otel_option("ask")
def resume_command(
    state_dir: Path,
    policy_path: Path | None,
    run_id: str,
    as_json: bool,
    telemetry: Telemetry | None,
) -> int:
    """Continue a run that was waiting for approval, from its stored transcript (with
    --otel, its spans join the trace `proctor ask --otel` started)."""
    store = RunStore(state_dir)
    try:
        stored = store.load(run_id)
    except RunNotFound as exc:
        raise click.BadParameter(str(exc), param_hint="RUN_ID") from None
    if stored.state.status != "waiting_approval":
        raise click.BadParameter(
            f"run {run_id} is {stored.state.status}; only a run waiting for approval resumes",
            param_hint="RUN_ID",
        )
    with open_gateway(state_dir, policy_path, telemetry=telemetry) as gateway:
        observer = telemetry.model_turn if telemetry is not None else None
        state = resume_stored_run(gateway, store, stored, turn_observer=observer)
    print_run(state, as_json=as_json)
    # Same contract as `proctor ask`: only a completed or still-waiting run is a success.
    return codes.OK if state.status in ("completed", "waiting_approval") else codes.CHECK_FAILED


def _get(store: Any, approval_id: str) -> ApprovalRequest:
    try:
        request: ApprovalRequest = store.get(approval_id)
    except ApprovalError as exc:
        raise click.BadParameter(str(exc), param_hint="APPROVAL_ID") from None
    return request
