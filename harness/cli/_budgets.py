"""`proctor budgets`: what each destructive-action budget has used, and the two-person reset."""

from __future__ import annotations

import json
from pathlib import Path

import click
from tabulate import tabulate

from governance.stores import BudgetResetRefused, BudgetScope
from harness import _exit_codes as codes
from harness._budget_reset import NoSuchBudget, reset_budgets, status_json
from harness.cli._options import gateway_options, open_gateway

SCOPES = ("agent_run", "actor", "agent", "team", "tool")


@click.group("budgets")
def budgets() -> None:
    """Destructive-action budgets: status, and the deliberate two-person reset."""


@budgets.command("status")
@gateway_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status_command(state_dir: Path, policy_path: Path | None, as_json: bool) -> int:
    """Every (budget, scope key) with calls on record: used / limit, and the last reset."""
    with open_gateway(state_dir, policy_path) as gateway:
        policy = gateway.policy.current()
        rows = gateway.budgets.status(policy.budgets)
    if as_json:
        click.echo(json.dumps([status_json(r) for r in rows], indent=2))
        return codes.OK
    if not policy.budgets:
        click.echo("the policy defines no budgets")
        return codes.OK
    table = [
        [
            r.budget_id,
            r.scope,
            r.key,
            f"{r.used}/{r.limit}",
            "EXHAUSTED" if r.remaining <= 0 else r.remaining,
            r.watermark.isoformat(timespec="seconds") if r.watermark else "-",
        ]
        for r in rows
    ]
    if not table:
        click.echo("no budgeted calls on record")
        return codes.OK
    click.echo(
        tabulate(table, headers=["budget", "scope", "key", "used", "remaining", "last reset"])
    )
    return codes.OK


@budgets.command("reset")
@gateway_options
@click.option("--scope", type=click.Choice(SCOPES), required=True)
@click.option(
    "--key", required=True, help="The scope's value: a run id, actor, agent, team or tool."
)
@click.option(
    "--budget",
    "budget_id",
    default=None,
    help="Only this budget (default: every budget of the scope).",
)
@click.option("--by", "by", required=True, help="The operator asking for the reset.")
@click.option("--approved-by", required=True, help="A second, different operator.")
@click.option("--reason", required=True, help="Why: kept with the watermark as evidence.")
def reset_command(
    state_dir: Path,
    policy_path: Path | None,
    scope: BudgetScope,
    key: str,
    budget_id: str | None,
    by: str,
    approved_by: str,
    reason: str,
) -> int:
    """Release an exhausted budget: two different people; moves a watermark, deletes nothing."""
    with open_gateway(state_dir, policy_path) as gateway:
        resets = reset_budgets(
            gateway,
            scope=scope,
            key=key,
            budget_id=budget_id,
            by=by,
            approved_by=approved_by,
            reason=reason,
        )
        try:
            for budget, _ in resets:
                click.echo(
                    f"reset {budget.id} for {scope}={key} (by {by}, approved by {approved_by})"
                )
        except NoSuchBudget as exc:
            raise click.BadParameter(str(exc), param_hint="--scope/--budget") from None
        except BudgetResetRefused as exc:
            click.echo(f"reset refused ({exc.code}): {exc}", err=True)
            return codes.CHECK_FAILED
    return codes.OK
