"""The two-person budget reset, as two people do it from two browsers.

`proctor budgets reset` takes both names at once (`--by`, `--approved-by`); here the first
operator asks for a reset (scope, key, budget, reason) and a different signed-in operator
confirms it, and only then does the reset run - through harness._budget_reset, the CLI's own
code, so the store's checks (two distinct people, neither charged to the budget, a reason)
decide exactly as they do there. Requests waiting for a second person live in this console
process only: a restart drops them, and nothing is released until someone confirms.
"""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass
from typing import get_args

from governance import Clock, Gateway
from governance.stores import BudgetReset, BudgetResetRefused, BudgetScope
from harness._budget_reset import NoSuchBudget, budgets_to_reset, reset_budgets

SCOPES: tuple[BudgetScope, ...] = get_args(BudgetScope)


class ResetRefused(ValueError):
    """A reset request or confirmation refused; `code` says which check (the store's codes,
    plus bad_scope, no_such_budget, missing_key, missing_reason, duplicate, not_found)."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class PendingReset:
    id: str
    scope: BudgetScope
    key: str
    budget_id: str | None
    reason: str
    requested_by: str
    requested_at: dt.datetime


class ResetDesk:
    def __init__(self, gateway: Gateway, clock: Clock) -> None:
        self._gateway = gateway
        self._clock = clock
        self._pending: dict[str, PendingReset] = {}
        self._next = 1
        self._lock = threading.Lock()

    def pending(self) -> list[PendingReset]:
        with self._lock:
            return list(self._pending.values())

    def request(
        self, *, scope: str, key: str, budget_id: str | None, reason: str, by: str
    ) -> PendingReset:
        """Ask for a reset; it waits for a different operator's confirmation."""
        chosen = _scope(scope)
        key, reason = key.strip(), reason.strip()
        if not key:
            raise ResetRefused("missing_key", "name the key to reset (a run id, actor, ...)")
        if not reason:
            raise ResetRefused(
                "missing_reason", "a reset needs a reason: say why the budget may be released"
            )
        try:
            budgets_to_reset(self._gateway.policy.current(), chosen, budget_id)
        except NoSuchBudget as exc:
            raise ResetRefused("no_such_budget", str(exc)) from None
        with self._lock:
            for other in self._pending.values():
                if (other.scope, other.key, other.budget_id) == (chosen, key, budget_id):
                    raise ResetRefused(
                        "duplicate",
                        f"{other.requested_by} already asked for this reset ({other.id}): "
                        "a different operator confirms it",
                    )
            made = PendingReset(
                id=f"reset-{self._next}",
                scope=chosen,
                key=key,
                budget_id=budget_id,
                reason=reason,
                requested_by=by,
                requested_at=self._clock.now(),
            )
            self._next += 1
            self._pending[made.id] = made
            return made

    def confirm(self, reset_id: str, *, by: str) -> tuple[PendingReset, list[BudgetReset]]:
        """Run the reset as (requester, `by`); refused ones stay pending, unchanged."""
        with self._lock:  # held through the reset: one confirmation wins, never two
            asked = self._take(reset_id)
            try:
                done = [
                    made
                    for _, made in reset_budgets(
                        self._gateway,
                        scope=asked.scope,
                        key=asked.key,
                        budget_id=asked.budget_id,
                        by=asked.requested_by,
                        approved_by=by,
                        reason=asked.reason,
                    )
                ]
            except BudgetResetRefused as exc:
                raise ResetRefused(exc.code, f"reset refused ({exc.code}): {exc}") from None
            except NoSuchBudget as exc:  # the policy changed since the request
                raise ResetRefused("no_such_budget", str(exc)) from None
            del self._pending[reset_id]
            return asked, done

    def cancel(self, reset_id: str) -> PendingReset:
        """Withdraw a request (nothing was released; anyone may clear it)."""
        with self._lock:
            asked = self._take(reset_id)
            del self._pending[reset_id]
            return asked

    def _take(self, reset_id: str) -> PendingReset:
        asked = self._pending.get(reset_id)
        if asked is None:
            raise ResetRefused(
                "not_found", f"{reset_id} is no longer waiting: confirmed or withdrawn already"
            )
        return asked


def _scope(scope: str) -> BudgetScope:
    for known in SCOPES:
        if scope == known:
            return known
    raise ResetRefused("bad_scope", f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
