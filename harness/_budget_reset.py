"""Budget status and the two-person reset, shared by `proctor budgets` and the console's
Budgets page so both release exactly the same budgets under the same checks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the gateway and stores load only when a command opens them
    from governance import Gateway
    from governance.policy import Policy
    from governance.stores import Budget, BudgetReset, BudgetScope, BudgetStatus


class NoSuchBudget(ValueError):
    """The policy has no budget of that scope (or with that id)."""


def status_json(row: BudgetStatus) -> dict[str, Any]:
    return {
        "budget": row.budget_id,
        "scope": row.scope,
        "key": row.key,
        "used": row.used,
        "limit": row.limit,
        "remaining": row.remaining,
        "window_seconds": row.window_seconds,
        "watermark": row.watermark.isoformat() if row.watermark else None,
    }


def budgets_to_reset(policy: Policy, scope: BudgetScope, budget_id: str | None) -> list[Budget]:
    """Every budget of `scope` (or only `budget_id`), or NoSuchBudget."""
    chosen = [
        b for b in policy.budgets if b.scope == scope and (budget_id is None or b.id == budget_id)
    ]
    if not chosen:
        raise NoSuchBudget(
            f"the policy has no {scope} budget" + (f" {budget_id!r}" if budget_id else "")
        )
    return chosen


def reset_budgets(
    gateway: Gateway,
    *,
    scope: BudgetScope,
    key: str,
    budget_id: str | None,
    by: str,
    approved_by: str,
    reason: str,
) -> Iterator[tuple[Budget, BudgetReset]]:
    """Reset each chosen budget for `key`, one at a time (yielding each done); the store's
    checks (two different people, neither charged, a reason) raise BudgetResetRefused."""
    for budget in budgets_to_reset(gateway.policy.current(), scope, budget_id):
        made = gateway.budgets.reset(
            budget_id=budget.id,
            key=budget.scope_key(key),
            by=by,
            approved_by=approved_by,
            reason=reason,
        )
        yield budget, made
