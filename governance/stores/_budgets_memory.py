"""The destructive-action ledger in process memory, for scenario runs: the SQLite ledger's rules.

What SQLite's `BEGIN IMMEDIATE` and triggers gave is kept with one lock and no public way to
change a row: `reserve` counts and appends under the lock (no overshoot, whatever the threads),
a reset appends a watermark (a ledger position, never a deletion), and a row changes once, from
`reserved` to its outcome. Rows are frozen dataclasses handed out in fresh lists. Ids, the
watermark arithmetic, key order and every refusal are the SQLite store's, so a run reads the
same on either backend. Every failure is a BudgetStoreError (or BudgetResetRefused).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator, Sequence
from typing import Final

from governance.core._clock import Clock, SystemClock
from governance.core._closing import Closing
from governance.core._contracts import Impact, Principal, ToolCall
from governance.stores._budgets_model import (
    COUNTED,
    SETTLE_OUTCOMES,
    Budget,
    BudgetDenial,
    BudgetReservation,
    BudgetReset,
    BudgetResetRefused,
    BudgetStatus,
    BudgetStoreError,
    LedgerRow,
    SettleOutcome,
    applicable,
    check_reset,
    check_settle,
    check_unique,
    epoch_us,
    from_us,
    most_restrictive,
    refuse_agent,
    refuse_look_alikes,
    status_row,
)

_NAME: Final = "budget store memory:"
_COUNTED: Final = frozenset(COUNTED)


class MemoryBudgetLedger(Closing):
    """Ledger rows and reset watermarks in lists, behind one lock; gone on `close()`."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        self._clock: Clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._open = True
        self._rows: list[LedgerRow] = []  # row id n is at index n - 1
        self._created_us: list[int] = []  # beside each row: what the window is compared with
        self._by_key: dict[tuple[str, str], list[int]] = {}  # (budget, key) -> row ids
        self._resets: list[BudgetReset] = []
        self._watermarks: dict[tuple[str, str], BudgetReset] = {}  # the latest per key

    @contextlib.contextmanager
    def _session(self, doing: str) -> Iterator[None]:
        """The lock, and every failure as the store's own error: callers fail closed on it."""
        with self._lock:
            if not self._open:
                raise BudgetStoreError(f"{_NAME} is closed")
            try:
                yield
            except (BudgetStoreError, BudgetResetRefused):
                raise
            except Exception as exc:
                raise BudgetStoreError(f"{_NAME} could not {doing}: {exc}") from exc

    def _now_us(self) -> int:
        return epoch_us(self._clock.now())

    def _used(self, budget: Budget, key: str, now_us: int) -> int:
        """Counted rows in the window, after the key's watermark (a ledger position)."""
        mark = self._watermarks.get((budget.id, key))
        after_row = 0 if mark is None else mark.after_row
        since = now_us - budget.window_seconds * 1_000_000
        rows, created = self._rows, self._created_us
        return sum(
            1
            for row_id in self._by_key.get((budget.id, key), ())
            if row_id > after_row
            and created[row_id - 1] > since
            and rows[row_id - 1].status in _COUNTED
        )

    def _most_restrictive(
        self, keyed: Sequence[tuple[Budget, str]], now_us: int
    ) -> BudgetDenial | None:
        return most_restrictive(keyed, lambda budget, key: self._used(budget, key, now_us))

    def reserve(
        self, call: ToolCall, impact: Impact, budgets: Sequence[Budget]
    ) -> BudgetReservation | BudgetDenial:
        """Hold one slot in every budget that counts this call, or name the one that is spent."""
        counting = applicable(impact, call, budgets)
        with self._session(f"reserve budget for call {call.call_id!r}"):
            if not counting:
                return BudgetReservation((), call.call_id, call.run_id, call.tool)
            now_us = self._now_us()
            keyed = [(budget, budget.key_for(call)) for budget in counting]
            denial = self._most_restrictive(keyed, now_us)
            if denial is not None:
                return denial  # nothing written
            created = from_us(now_us)
            principal = call.principal
            ids = []
            # Every row is made before one is stored: a failure leaves the ledger as it was.
            made = []
            for offset, (budget, key) in enumerate(keyed, start=len(self._rows) + 1):
                made.append(
                    LedgerRow(
                        offset, budget.id, budget.scope, key, call.call_id, call.run_id,
                        call.tool, impact, principal.actor, principal.agent, principal.team,
                        "reserved", created, None,
                    )
                )  # fmt: skip
            for row in made:
                self._rows.append(row)
                self._created_us.append(now_us)
                self._by_key.setdefault((row.budget_id, row.key), []).append(row.id)
                ids.append(row.id)
            return BudgetReservation(
                tuple(ids), call.call_id, call.run_id, call.tool, tuple(b.id for b in counting)
            )

    def check(
        self, call: ToolCall, impact: Impact, budgets: Sequence[Budget]
    ) -> BudgetDenial | None:
        """The denial `reserve` would give right now, or None; writes nothing."""
        counting = applicable(impact, call, budgets)
        with self._session(f"check budget for call {call.call_id!r}"):
            if not counting:
                return None
            now_us = self._now_us()
            return self._most_restrictive(
                [(budget, budget.key_for(call)) for budget in counting], now_us
            )

    def settle(self, reservation: BudgetReservation, outcome: SettleOutcome) -> None:
        """Record what became of a reserved call; a row is settled once (again: a no-op)."""
        if outcome not in SETTLE_OUTCOMES:
            raise ValueError(f"outcome must be one of {list(SETTLE_OUTCOMES)}, not {outcome!r}")
        if not reservation.ids:
            return
        with self._session(f"settle call {reservation.call_id!r} as {outcome}"):
            now_us = self._now_us()
            count = len(self._rows)
            check_settle(
                reservation,
                outcome,
                {
                    i: (row.status, row.call_id, row.run_id)
                    for i in reservation.ids
                    if 1 <= i <= count
                    for row in (self._rows[i - 1],)
                },
            )
            settled_at = from_us(now_us)
            for row_id in set(reservation.ids):
                row = self._rows[row_id - 1]
                if row.status == "reserved":
                    self._rows[row_id - 1] = dataclasses.replace(
                        row, status=outcome, settled_at=settled_at
                    )

    def usage(self, call: ToolCall, budgets: Sequence[Budget]) -> dict[str, int]:
        """{budget id: used} for each budget, under the key this call would be charged to."""
        check_unique(budgets)
        with self._session(f"read budget usage for call {call.call_id!r}"):
            now_us = self._now_us()
            return {b.id: self._used(b, b.key_for(call), now_us) for b in budgets}

    def status(self, budgets: Sequence[Budget]) -> list[BudgetStatus]:
        """One row per (budget, key) seen in the ledger or its resets, sorted by budget, key."""
        check_unique(budgets)
        out: list[BudgetStatus] = []
        with self._session("read budget status"):
            now_us = self._now_us()
            for budget in sorted(budgets, key=lambda b: b.id):
                keys = {key for (bid, key) in self._by_key if bid == budget.id}
                keys.update(key for (bid, key) in self._watermarks if bid == budget.id)
                for key in sorted(keys):  # code point order: SQLite's order of UTF-8 text
                    used = self._used(budget, key, now_us)
                    mark = self._watermarks.get((budget.id, key))
                    out.append(status_row(budget, key, used, None if mark is None else mark.at))
        return out

    def reset(
        self,
        *,
        budget_id: str,
        key: str,
        by: str,
        approved_by: str,
        reason: str,
        agent_principal: Principal | None = None,
    ) -> BudgetReset:
        """Release (budget, key) with two different operators, neither the agent, and a reason.

        Appends a watermark; every earlier ledger row stays and keeps being listed.
        """
        check_reset(budget_id, key, by, approved_by, reason, agent_principal)
        with self._session(f"reset budget {budget_id!r} for {key!r}"):
            now_us = self._now_us()
            mark = self._watermarks.get((budget_id, key))
            previous = 0 if mark is None else mark.after_row
            charged = [self._rows[i - 1] for i in self._by_key.get((budget_id, key), ())]
            refuse_agent(
                by,
                approved_by,
                {name for row in charged if row.id > previous for name in (row.actor, row.agent)},
                f"charged to {budget_id} {key!r}",
            )
            known = {name for r in self._resets for name in (r.by, r.approved_by)}
            known.update(name for row in self._rows for name in (row.actor, row.agent))
            refuse_look_alikes(sorted(known), by, approved_by)
            made = BudgetReset(
                id=len(self._resets) + 1,
                budget_id=budget_id,
                key=key,
                at=from_us(now_us),
                by=by.strip(),
                approved_by=approved_by.strip(),
                reason=reason.strip(),
                after_row=len(self._rows),
            )
            self._resets.append(made)
            self._watermarks[(budget_id, key)] = made
            return made

    def ledger(self, budget_id: str | None = None, key: str | None = None) -> list[LedgerRow]:
        """Every ledger row (optionally for one budget and/or key), oldest first."""
        with self._session("read the budget ledger"):
            return [
                row
                for row in self._rows
                if (budget_id is None or row.budget_id == budget_id)
                and (key is None or row.key == key)
            ]

    def resets(self) -> list[BudgetReset]:
        """Every reset ever made, oldest first."""
        with self._session("read budget resets"):
            return list(self._resets)

    def close(self) -> None:
        with self._lock:
            self._open = False
