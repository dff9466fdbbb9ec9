"""The budget ledger in SQL, for any database that speaks it: SQLite (`BudgetStore`) and
PostgreSQL (`PostgresBudgetLedger`) run these very statements.

A backend supplies the connection (`_session`: one connection under the store's lock, every
failure turned into BudgetStoreError), the transaction (`_transaction`: how a writer excludes
other writers of the same budget keys - SQLite's `BEGIN IMMEDIATE` takes the whole file,
PostgreSQL takes an advisory lock per key) and its parameter marker. Everything else - what is
counted, the watermark arithmetic, the refusals - is written once, here and in
governance.stores._budgets_model.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Final

from governance.core._clock import Clock
from governance.core._contracts import Impact, Principal, ToolCall
from governance.stores._budgets_model import (
    COUNTED,
    SETTLE_OUTCOMES,
    Budget,
    BudgetDenial,
    BudgetReservation,
    BudgetReset,
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
    iso_us,
    ledger_row,
    most_restrictive,
    refuse_agent,
    refuse_look_alikes,
    status_row,
)

LEDGER_COLUMNS: Final = (
    "id, budget_id, scope, key, call_id, run_id, tool, impact, actor, agent, team, status, "
    "created_us, created_at, settled_us, settled_at"
)
# Columns a settle must never change (the triggers of both schemas list the same ones).
FIXED_COLUMNS: Final = (
    "id", "budget_id", "scope", "key", "call_id", "run_id", "tool", "impact", "actor", "agent",
    "team", "created_us", "created_at",
)  # fmt: skip
RESET_COLUMNS: Final = "id, budget_id, key, at_us, at, by, approved_by, reason, after_row"

def create_tables(create: str, identity: str, integer: str) -> tuple[str, str]:
    """The ledger and resets tables in one dialect: `create` is the statement's opening
    (`CREATE TABLE IF NOT EXISTS`), `identity` the id column's type, `integer` a 64-bit one."""
    ledger = f"""
    {create} budget_ledger (
        id {identity},
        budget_id TEXT NOT NULL,
        scope TEXT NOT NULL,
        key TEXT NOT NULL,
        call_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        impact TEXT NOT NULL,
        actor TEXT NOT NULL,
        agent TEXT NOT NULL,
        team TEXT NOT NULL,
        status TEXT NOT NULL
            CHECK (status IN ('reserved', 'executed', 'released', 'unknown')),
        created_us {integer} NOT NULL,
        created_at TEXT NOT NULL,
        settled_us {integer},
        settled_at TEXT
    )
    """
    resets = f"""
    {create} budget_resets (
        id {identity},
        budget_id TEXT NOT NULL,
        key TEXT NOT NULL,
        at_us {integer} NOT NULL,
        at TEXT NOT NULL,
        by TEXT NOT NULL,
        approved_by TEXT NOT NULL,
        reason TEXT NOT NULL,
        after_row {integer} NOT NULL
    )
    """
    return ledger, resets


_COUNTED_SQL: Final = ", ".join(f"'{status}'" for status in COUNTED)
BudgetKey = tuple[str, str]  # (budget id, key): what a writer must hold alone


class SqlBudgetLedger:
    """The ledger's statements and rules; a subclass gives connection and transaction.

    Statements are written with `?` markers; `_marker` is what the driver wants instead.
    `_row_lock` is appended to the SELECT of the rows a settle changes (PostgreSQL locks
    them; SQLite's write transaction already holds the file).
    """

    _clock: Clock
    _marker: str = "?"
    _row_lock: str = ""

    def _session(self, doing: str) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _transaction(
        self, conn: Any, *, write: bool, keys: Sequence[BudgetKey] = ()
    ) -> AbstractContextManager[None]:
        """Commit when the body returns (a denial included: it wrote nothing), roll back when
        it raises. A writer holds `keys` alone until it commits."""
        raise NotImplementedError

    def _run(self, conn: Any, sql: str, params: Sequence[object] = ()) -> Any:
        if self._marker != "?":
            sql = sql.replace("?", self._marker)
        return conn.execute(sql, tuple(params))

    def _now_us(self) -> int:
        return epoch_us(self._clock.now())

    def _watermark(self, conn: Any, budget_id: str, key: str) -> tuple[int, int | None]:
        """(ledger rows up to this id no longer count, when the latest reset happened)."""
        row = self._run(
            conn,
            "SELECT after_row, at_us FROM budget_resets WHERE budget_id = ? AND key = ? "
            "ORDER BY id DESC LIMIT 1",
            (budget_id, key),
        ).fetchone()
        return (0, None) if row is None else (int(row[0]), int(row[1]))

    def _used(self, conn: Any, budget: Budget, key: str, now_us: int) -> int:
        # A reset is a ledger position, not a time: a row written in the same microsecond as
        # the reset, or under a clock that stepped back, is still on the right side of it.
        # One statement (the watermark a subquery): one round trip to a server per budget.
        row = self._run(
            conn,
            "SELECT COUNT(*) FROM budget_ledger WHERE budget_id = ? AND key = ? "
            f"AND status IN ({_COUNTED_SQL}) AND created_us > ? AND id > COALESCE(("
            "SELECT after_row FROM budget_resets WHERE budget_id = ? AND key = ? "
            "ORDER BY id DESC LIMIT 1), 0)",
            (budget.id, key, now_us - budget.window_seconds * 1_000_000, budget.id, key),
        ).fetchone()
        return int(row[0])

    def _most_restrictive(
        self, conn: Any, keyed: Sequence[tuple[Budget, str]], now_us: int
    ) -> BudgetDenial | None:
        return most_restrictive(keyed, lambda budget, key: self._used(conn, budget, key, now_us))

    def reserve(
        self, call: ToolCall, impact: Impact, budgets: Sequence[Budget]
    ) -> BudgetReservation | BudgetDenial:
        """Hold one slot in every budget that counts this call, or name the one that is spent."""
        counting = applicable(impact, call, budgets)
        with self._session(f"reserve budget for call {call.call_id!r}") as conn:
            if not counting:
                return BudgetReservation((), call.call_id, call.run_id, call.tool)
            now_us = self._now_us()
            keyed = [(budget, budget.key_for(call)) for budget in counting]
            principal = call.principal
            ids = []
            with self._transaction(conn, write=True, keys=[(b.id, k) for b, k in keyed]):
                denial = self._most_restrictive(conn, keyed, now_us)
                if denial is not None:
                    return denial  # nothing written
                for budget, key in keyed:
                    row = self._run(
                        conn,
                        f"INSERT INTO budget_ledger ({LEDGER_COLUMNS.removeprefix('id, ')}) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'reserved', ?, ?, NULL, NULL) "
                        "RETURNING id",
                        (
                            budget.id, budget.scope, key, call.call_id, call.run_id, call.tool,
                            impact, principal.actor, principal.agent, principal.team, now_us,
                            iso_us(now_us),
                        ),
                    ).fetchone()  # fmt: skip
                    if row is None:
                        raise BudgetStoreError("the ledger returned no row id")
                    ids.append(int(row[0]))
            return BudgetReservation(
                tuple(ids), call.call_id, call.run_id, call.tool, tuple(b.id for b in counting)
            )

    def check(
        self, call: ToolCall, impact: Impact, budgets: Sequence[Budget]
    ) -> BudgetDenial | None:
        """The denial `reserve` would give right now, or None; writes nothing.

        For a call held for approval: refuse early when its budget is already spent. It
        reserves nothing, so the approved call must still `reserve` before it executes.
        """
        counting = applicable(impact, call, budgets)
        with self._session(f"check budget for call {call.call_id!r}") as conn:
            if not counting:
                return None
            now_us = self._now_us()
            keyed = [(budget, budget.key_for(call)) for budget in counting]
            with self._transaction(conn, write=False):
                return self._most_restrictive(conn, keyed, now_us)

    def settle(self, reservation: BudgetReservation, outcome: SettleOutcome) -> None:
        """Record what became of a reserved call.

        executed: the effect happened (counts). released: it failed before any effect (the
        slot is freed). unknown: the effect may have landed, e.g. a timeout (still counts).
        A row is settled once; settling again with the same outcome is a no-op.
        """
        if outcome not in SETTLE_OUTCOMES:
            raise ValueError(f"outcome must be one of {list(SETTLE_OUTCOMES)}, not {outcome!r}")
        if not reservation.ids:
            return
        marks = ", ".join("?" for _ in reservation.ids)
        with self._session(f"settle call {reservation.call_id!r} as {outcome}") as conn:
            now_us = self._now_us()
            with self._transaction(conn, write=True):
                rows = self._run(
                    conn,
                    "SELECT id, status, call_id, run_id FROM budget_ledger "
                    f"WHERE id IN ({marks}) ORDER BY id{self._row_lock}",
                    reservation.ids,
                ).fetchall()
                check_settle(
                    reservation,
                    outcome,
                    {int(r[0]): (str(r[1]), str(r[2]), str(r[3])) for r in rows},
                )
                self._run(
                    conn,
                    "UPDATE budget_ledger SET status = ?, settled_us = ?, settled_at = ? "
                    f"WHERE id IN ({marks}) AND status = 'reserved'",
                    (outcome, now_us, iso_us(now_us), *reservation.ids),
                )

    def usage(self, call: ToolCall, budgets: Sequence[Budget]) -> dict[str, int]:
        """{budget id: used} for each budget, under the key this call would be charged to."""
        check_unique(budgets)
        with self._session(f"read budget usage for call {call.call_id!r}") as conn:
            now_us = self._now_us()
            with self._transaction(conn, write=False):
                return {
                    budget.id: self._used(conn, budget, budget.key_for(call), now_us)
                    for budget in budgets
                }

    def status(self, budgets: Sequence[Budget]) -> list[BudgetStatus]:
        """One row per (budget, key) seen in the ledger or its resets, sorted by budget, key
        (keys in code point order, whatever the database's collation)."""
        check_unique(budgets)
        out: list[BudgetStatus] = []
        with self._session("read budget status") as conn:
            now_us = self._now_us()
            with self._transaction(conn, write=False):
                for budget in sorted(budgets, key=lambda b: b.id):
                    keys = self._run(
                        conn,
                        "SELECT key FROM budget_ledger WHERE budget_id = ? "
                        "UNION SELECT key FROM budget_resets WHERE budget_id = ?",
                        (budget.id, budget.id),
                    ).fetchall()
                    for key in sorted(str(row[0]) for row in keys):
                        used = self._used(conn, budget, key, now_us)
                        _, at_us = self._watermark(conn, budget.id, key)
                        at = None if at_us is None else from_us(at_us)
                        out.append(status_row(budget, key, used, at))
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

        Inserts a watermark row; every earlier ledger row stays. The agent's own actor and
        agent names are refused, and so is anyone charged to this key since the last reset.
        """
        check_reset(budget_id, key, by, approved_by, reason, agent_principal)
        with self._session(f"reset budget {budget_id!r} for {key!r}") as conn:
            now_us = self._now_us()
            with self._transaction(conn, write=True, keys=[(budget_id, key), RESETS_KEY]):
                previous, _ = self._watermark(conn, budget_id, key)
                charged = self._run(
                    conn,
                    "SELECT DISTINCT actor, agent FROM budget_ledger "
                    "WHERE budget_id = ? AND key = ? AND id > ?",
                    (budget_id, key, previous),
                ).fetchall()
                refuse_agent(
                    by,
                    approved_by,
                    {str(name) for row in charged for name in row},
                    f"charged to {budget_id} {key!r}",
                )
                known = self._run(
                    conn,
                    "SELECT by FROM budget_resets UNION SELECT approved_by FROM budget_resets "
                    "UNION SELECT actor FROM budget_ledger UNION SELECT agent FROM budget_ledger",
                ).fetchall()
                refuse_look_alikes(sorted(str(row[0]) for row in known), by, approved_by)
                (after_row,) = self._run(
                    conn, "SELECT COALESCE(MAX(id), 0) FROM budget_ledger"
                ).fetchone()
                made = self._run(
                    conn,
                    f"INSERT INTO budget_resets ({RESET_COLUMNS.removeprefix('id, ')}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    (
                        budget_id, key, now_us, iso_us(now_us), by.strip(), approved_by.strip(),
                        reason.strip(), int(after_row),
                    ),
                ).fetchone()  # fmt: skip
                if made is None:
                    raise BudgetStoreError("the reset returned no row id")
        return BudgetReset(
            id=int(made[0]),
            budget_id=budget_id,
            key=key,
            at=from_us(now_us),
            by=by.strip(),
            approved_by=approved_by.strip(),
            reason=reason.strip(),
            after_row=int(after_row),
        )

    def ledger(self, budget_id: str | None = None, key: str | None = None) -> list[LedgerRow]:
        """Every ledger row (optionally for one budget and/or key), oldest first."""
        where, params = [], []
        if budget_id is not None:
            where.append("budget_id = ?")
            params.append(budget_id)
        if key is not None:
            where.append("key = ?")
            params.append(key)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        with self._session("read the budget ledger") as conn:
            rows = self._run(
                conn, f"SELECT {LEDGER_COLUMNS} FROM budget_ledger{clause} ORDER BY id", params
            ).fetchall()
            return [ledger_row(row) for row in rows]

    def resets(self) -> list[BudgetReset]:
        """Every reset ever made, oldest first."""
        with self._session("read budget resets") as conn:
            rows = self._run(conn, f"SELECT {RESET_COLUMNS} FROM budget_resets ORDER BY id")
            return list(_resets(rows.fetchall()))


# Every reset also holds this one: the look-alike check reads every name ever recorded, so two
# resets (of different keys) must not both pass it with names that look alike.
RESETS_KEY: Final[BudgetKey] = ("", "budget resets")


def _resets(rows: Sequence[Sequence[Any]]) -> Iterator[BudgetReset]:
    for row_id, budget_id, key, at_us, _, by, approved_by, reason, after_row in rows:
        yield BudgetReset(
            id=int(row_id),
            budget_id=str(budget_id),
            key=str(key),
            at=from_us(int(at_us)),
            by=str(by),
            approved_by=str(approved_by),
            reason=str(reason),
            after_row=int(after_row),
        )
