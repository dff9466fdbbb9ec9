"""What every budget backend shares: the ledger's records, its errors and the rules that do not
depend on where rows are kept (which budgets count a call, which denial is named, who may reset,
what a settle may change). The SQLite and PostgreSQL ledgers (governance.stores._budgets_sql)
and the memory one (_budgets_memory) all decide with these, so a run reads the same on each.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from governance.core._contracts import IMPACTS, Impact, Principal, ToolCall
from governance.core._errors import GovernanceError
from governance.core._identity import look_alike, name_problem, skeleton
from governance.policy._model import BUDGET_SCOPES, BudgetScope
from governance.policy._rules import Budget
from governance.stores._sqlite import utc_text

__all__ = [
    "COUNTED", "SCOPE_ORDER", "SETTLE_OUTCOMES", "Budget", "BudgetDenial", "BudgetReservation",
    "BudgetReset", "BudgetResetRefused", "BudgetScope", "BudgetStatus", "BudgetStoreError",
    "LedgerRow", "LedgerStatus", "SettleOutcome", "applicable", "check_reset", "check_settle",
    "check_unique", "epoch_us", "from_us", "iso_us", "ledger_row", "most_restrictive",
    "refuse_agent", "refuse_look_alikes", "restrictiveness", "status_row",
]  # fmt: skip

SCOPE_ORDER: Final[tuple[BudgetScope, ...]] = BUDGET_SCOPES
LedgerStatus = Literal["reserved", "executed", "released", "unknown"]
SettleOutcome = Literal["executed", "released", "unknown"]
SETTLE_OUTCOMES: Final[tuple[SettleOutcome, ...]] = ("executed", "released", "unknown")
# A reservation nobody settled (a crash mid-call) keeps counting: the effect may have happened.
COUNTED: Final[tuple[LedgerStatus, ...]] = ("reserved", "executed", "unknown")

_STATUSES: Final[dict[str, LedgerStatus]] = {
    "reserved": "reserved", "executed": "executed", "released": "released", "unknown": "unknown",
}  # fmt: skip
_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICROSECOND: Final = dt.timedelta(microseconds=1)


class BudgetStoreError(GovernanceError):
    """The budget store could not answer or record; the call it guards must not execute."""


class BudgetResetRefused(GovernanceError):
    """A reset did not have two different people, neither of them the agent, and a reason.

    `code` is one of: missing_budget, missing_operator, invalid_operator, missing_reason,
    same_person, look_alike, self_release. People are compared by skeleton
    (governance.core._identity).
    """

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class BudgetReservation:
    """The ledger rows (one per applicable budget) held for one call until it is settled.

    No applicable budget gives an empty reservation: nothing was written, settling is a no-op.
    """

    ids: tuple[int, ...]
    call_id: str
    run_id: str
    tool: str
    budget_ids: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.ids


@dataclass(frozen=True, slots=True)
class BudgetDenial:
    """The most restrictive exhausted budget for a refused call; nothing was written."""

    budget_id: str
    scope: BudgetScope
    key: str
    used: int
    limit: int
    window_seconds: int = 0

    @property
    def reason(self) -> str:
        return f"budget_exhausted:{self.scope}"

    @property
    def message(self) -> str:
        return (
            f"budget {self.budget_id} is exhausted for {self.scope} {self.key!r}: {self.used} of "
            f"{self.limit} used in the last {self.window_seconds}s; two operators must reset it "
            "(proctor budgets reset)"
        )


@dataclass(frozen=True, slots=True)
class BudgetStatus:
    """One (budget, key) as counted now."""

    budget_id: str
    scope: BudgetScope
    key: str
    used: int
    limit: int
    window_seconds: int
    remaining: int
    watermark: dt.datetime | None

    @property
    def exhausted(self) -> bool:
        return self.remaining <= 0


@dataclass(frozen=True, slots=True)
class BudgetReset:
    """A two-person release of one (budget, key): ledger rows up to `after_row` stop counting."""

    id: int
    budget_id: str
    key: str
    at: dt.datetime
    by: str
    approved_by: str
    reason: str
    after_row: int


@dataclass(frozen=True, slots=True)
class LedgerRow:
    """One stored reservation and what became of it."""

    id: int
    budget_id: str
    scope: str
    key: str
    call_id: str
    run_id: str
    tool: str
    impact: str
    actor: str
    agent: str
    team: str
    status: LedgerStatus
    created_at: dt.datetime
    settled_at: dt.datetime | None


def epoch_us(moment: dt.datetime) -> int:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("the clock returned a naive datetime; budget timestamps must be UTC")
    return (moment - _EPOCH) // _MICROSECOND


def from_us(value: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(microseconds=value)


def iso_us(value: int) -> str:
    return utc_text(from_us(value))


def _person(name: str) -> str:
    """How people are compared: by skeleton, so 'Ann', ' ann' and 'Аnn' (Cyrillic A) are one."""
    return skeleton(name)


def restrictiveness(denial: BudgetDenial) -> tuple[int, int, str]:
    return (denial.limit - denial.used, SCOPE_ORDER.index(denial.scope), denial.budget_id)


def check_unique(budgets: Sequence[Budget]) -> None:
    ids = [budget.id for budget in budgets]
    if len(set(ids)) != len(ids):
        raise BudgetStoreError(f"budget ids must be unique, got {ids}")


def check_reset(
    budget_id: str,
    key: str,
    by: str,
    approved_by: str,
    reason: str,
    agent_principal: Principal | None,
) -> None:
    """What every backend refuses before it looks at the ledger (BudgetResetRefused)."""
    if not isinstance(budget_id, str) or not budget_id.strip():
        raise BudgetResetRefused("missing_budget", "name the budget to reset")
    if not isinstance(key, str):
        raise BudgetResetRefused("missing_budget", "name the key to reset")
    for role, name in (("by", by), ("approved_by", approved_by)):
        if not isinstance(name, str) or not name.strip():
            raise BudgetResetRefused(
                "missing_operator", f"a reset needs two named operators: {role} is empty"
            )
    if not isinstance(reason, str) or not reason.strip():
        raise BudgetResetRefused(
            "missing_reason", "a reset needs a reason: say why the budget may be released"
        )
    for name in (by, approved_by):
        problem = name_problem(name)
        if problem is not None:
            raise BudgetResetRefused("invalid_operator", f"operator name refused: {problem}")
    if _person(by) == _person(approved_by):
        same = by.strip() == approved_by.strip()
        looks = "" if same else f" ({ascii(approved_by)} looks like it)"
        raise BudgetResetRefused(
            "same_person",
            f"{by!r}{looks} cannot both request and approve a reset: a second person must "
            "approve",
        )
    if agent_principal is not None:
        refuse_agent(
            by,
            approved_by,
            {agent_principal.actor, agent_principal.agent},
            "the agent's own principal",
        )


def refuse_look_alikes(known: Sequence[str], by: str, approved_by: str) -> None:
    """A name that looks like a known operator or principal but is spelled otherwise."""
    for name in (by, approved_by):
        other = look_alike(name, known)
        if other is not None:
            raise BudgetResetRefused(
                "look_alike",
                f"{ascii(name)} looks like the existing name {other!r} but is spelled "
                "differently; use the exact name (look-alike names are one person)",
            )


def refuse_agent(by: str, approved_by: str, names: set[str], what: str) -> None:
    barred = {_person(name) for name in names if name.strip()}
    for name in (by, approved_by):
        if _person(name) in barred:
            raise BudgetResetRefused(
                "self_release",
                f"{name!r} is {what} and cannot release its own budget: ask two other "
                "operators",
            )


def applicable(impact: Impact, call: ToolCall, budgets: Sequence[Budget]) -> list[Budget]:
    """The budgets that count this call (an impact that is not one is refused, not ignored)."""
    if impact not in IMPACTS:
        raise BudgetStoreError(f"unknown impact {impact!r}: expected one of {list(IMPACTS)}")
    check_unique(budgets)
    return [budget for budget in budgets if budget.applies_to(call.tool, impact)]


def most_restrictive(
    keyed: Sequence[tuple[Budget, str]], used: Callable[[Budget, str], int]
) -> BudgetDenial | None:
    """The denial for the budget furthest over its limit, or None when every one has room."""
    exhausted = []
    for budget, key in keyed:
        count = used(budget, key)
        if count >= budget.limit:
            exhausted.append(
                BudgetDenial(budget.id, budget.scope, key, count, budget.limit,
                             budget.window_seconds)
            )  # fmt: skip
    return min(exhausted, key=restrictiveness) if exhausted else None


def check_settle(
    reservation: BudgetReservation,
    outcome: SettleOutcome,
    found: Mapping[int, tuple[str, str, str]],
) -> None:
    """Refuse a settle of rows that are missing, another call's, or settled otherwise.

    `found`: {row id: (status, call id, run id)} for the rows the reservation names.
    """
    missing = [i for i in reservation.ids if i not in found]
    if missing:
        raise BudgetStoreError(f"no ledger rows {missing} to settle")
    for row_id, (status, call_id, run_id) in sorted(found.items()):
        if (call_id, run_id) != (reservation.call_id, reservation.run_id):
            raise BudgetStoreError(
                f"ledger row {row_id} belongs to call {call_id!r} of run {run_id!r}"
            )
        if status not in ("reserved", outcome):
            raise BudgetStoreError(
                f"ledger row {row_id} was already settled as {status}, not {outcome}"
            )


def status_row(budget: Budget, key: str, used: int, watermark: dt.datetime | None) -> BudgetStatus:
    return BudgetStatus(
        budget_id=budget.id,
        scope=budget.scope,
        key=key,
        used=used,
        limit=budget.limit,
        window_seconds=budget.window_seconds,
        remaining=max(budget.limit - used, 0),
        watermark=watermark,
    )


def ledger_row(row: Sequence[object]) -> LedgerRow:
    """A stored row (the columns of `LEDGER_COLUMNS`, in order) as a LedgerRow."""
    (row_id, budget_id, scope, key, call_id, run_id, tool, impact, actor, agent, team, status,
     created_us, _, settled_us, _) = row  # fmt: skip
    known = _STATUSES.get(str(status))
    if known is None:
        raise BudgetStoreError(f"ledger row {row_id} has an unknown status {status!r}")
    return LedgerRow(
        id=int(str(row_id)),
        budget_id=str(budget_id),
        scope=str(scope),
        key=str(key),
        call_id=str(call_id),
        run_id=str(run_id),
        tool=str(tool),
        impact=str(impact),
        actor=str(actor),
        agent=str(agent),
        team=str(team),
        status=known,
        created_at=from_us(int(str(created_us))),
        settled_at=None if settled_us is None else from_us(int(str(settled_us))),
    )
