"""Destructive-action budgets: a SQLite ledger that stops a looping agent after N counted calls.

A reservation counts and inserts in one `BEGIN IMMEDIATE` transaction, so threads and processes
sharing the file can never overshoot a limit. A reset inserts a watermark approved by two people
and never deletes or rewrites a ledger row: what happened before stays as evidence. Every
failure is a `BudgetStoreError`, which the firewall turns into "do not execute". The file is
durable per its mode (`fsync` or `os`, see governance.stores._sqlite); the memory backend
(`MemoryBudgetLedger`) keeps the same rules in Python.
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from governance.core._clock import Clock, SystemClock
from governance.core._contracts import IMPACTS, Impact, Principal, ToolCall
from governance.core._errors import GovernanceError
from governance.core._identity import look_alike, name_problem, skeleton
from governance.policy._model import BUDGET_SCOPES, BudgetScope
from governance.policy._rules import Budget
from governance.stores._sqlite import (
    Durability,
    SqliteStore,
    check_durability,
    open_connection,
    transaction,
    utc_text,
)

__all__ = [
    "SCOPE_ORDER",
    "Budget",
    "BudgetDenial",
    "BudgetReservation",
    "BudgetReset",
    "BudgetResetRefused",
    "BudgetScope",
    "BudgetStatus",
    "BudgetStore",
    "BudgetStoreError",
    "LedgerRow",
    "LedgerStatus",
    "SettleOutcome",
]

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
_LEDGER_COLUMNS: Final = (
    "id, budget_id, scope, key, call_id, run_id, tool, impact, actor, agent, team, status, "
    "created_us, created_at, settled_us, settled_at"
)
_FIXED_COLUMNS: Final = (
    "id", "budget_id", "scope", "key", "call_id", "run_id", "tool", "impact", "actor", "agent",
    "team", "created_us", "created_at",
)  # fmt: skip
_RESET_COLUMNS: Final = "id, budget_id, key, at_us, at, by, approved_by, reason, after_row"
_COUNTED_SQL: Final = ", ".join(f"'{status}'" for status in COUNTED)

_SCHEMA: Final[tuple[str, ...]] = (
    """
    CREATE TABLE IF NOT EXISTS budget_ledger (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
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
        created_us INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        settled_us INTEGER,
        settled_at TEXT
    )
    """,
    "CREATE INDEX IF NOT EXISTS budget_ledger_window "
    "ON budget_ledger (budget_id, key, created_us)",
    """
    CREATE TABLE IF NOT EXISTS budget_resets (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        budget_id TEXT NOT NULL,
        key TEXT NOT NULL,
        at_us INTEGER NOT NULL,
        at TEXT NOT NULL,
        by TEXT NOT NULL,
        approved_by TEXT NOT NULL,
        reason TEXT NOT NULL,
        after_row INTEGER NOT NULL
    )
    """,
    "CREATE INDEX IF NOT EXISTS budget_resets_key ON budget_resets (budget_id, key)",
    # Evidence is append-only: rows are never deleted, and a ledger row changes only once,
    # from reserved to its outcome.
    """
    CREATE TRIGGER IF NOT EXISTS budget_ledger_never_deleted BEFORE DELETE ON budget_ledger
    BEGIN SELECT RAISE(ABORT, 'budget ledger rows are evidence and are never deleted'); END
    """,
    f"""
    CREATE TRIGGER IF NOT EXISTS budget_ledger_settled_once BEFORE UPDATE ON budget_ledger
    WHEN OLD.status <> 'reserved' OR NEW.status NOT IN ('executed', 'released', 'unknown')
        OR {" OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in _FIXED_COLUMNS)}
    BEGIN SELECT RAISE(ABORT, 'a budget ledger row is settled once and only its outcome changes');
    END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS budget_resets_never_updated BEFORE UPDATE ON budget_resets
    BEGIN SELECT RAISE(ABORT, 'budget resets are evidence and are never changed'); END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS budget_resets_never_deleted BEFORE DELETE ON budget_resets
    BEGIN SELECT RAISE(ABORT, 'budget resets are evidence and are never deleted'); END
    """,
)


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


def _iso(value: int) -> str:
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


def _create_schema(conn: sqlite3.Connection) -> None:
    with transaction(conn):
        for statement in _SCHEMA:
            conn.execute(statement)
        conn.execute("COMMIT")


class BudgetStore(SqliteStore):
    """Budget counts in one SQLite file (WAL), shared safely by threads and processes.

    One connection per store behind a lock; `BEGIN IMMEDIATE` plus a busy timeout between
    connections. Time comes from the injected clock; timestamps are stored as UTC epoch
    microseconds (compared) and ISO-8601 text (read by people).
    """

    _label = "budget store"
    _error = BudgetStoreError
    # Fail closed on anything: a clock or a row that cannot be read must never let a call by.
    _wrapped = (Exception,)
    _passed_on = (BudgetStoreError, BudgetResetRefused)

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        busy_timeout: float = 10.0,
        durability: Durability = "fsync",
    ) -> None:
        self.path = Path(path)
        self.durability = check_durability(durability)
        self._clock: Clock = clock or SystemClock()
        super().__init__()
        try:
            self._conn = self._connect(busy_timeout)
        except Exception as exc:
            raise BudgetStoreError(f"cannot open budget store {self.path}: {exc}") from exc

    def _connect(self, busy_timeout: float) -> sqlite3.Connection:
        # fsync: a reservation is on disk before the call it guards may run.
        conn = open_connection(self.path, durability=self.durability, busy_timeout=busy_timeout)
        try:
            _create_schema(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _now_us(self) -> int:
        return epoch_us(self._clock.now())

    @staticmethod
    def _watermark(conn: sqlite3.Connection, budget_id: str, key: str) -> tuple[int, int | None]:
        """(ledger rows up to this id no longer count, when the latest reset happened)."""
        row = conn.execute(
            "SELECT after_row, at_us FROM budget_resets WHERE budget_id = ? AND key = ? "
            "ORDER BY id DESC LIMIT 1",
            (budget_id, key),
        ).fetchone()
        return (0, None) if row is None else (int(row[0]), int(row[1]))

    @classmethod
    def _used(cls, conn: sqlite3.Connection, budget: Budget, key: str, now_us: int) -> int:
        after_row, _ = cls._watermark(conn, budget.id, key)
        # A reset is a ledger position, not a time: a row written in the same microsecond as
        # the reset, or under a clock that stepped back, is still on the right side of it.
        row = conn.execute(
            "SELECT COUNT(*) FROM budget_ledger WHERE budget_id = ? AND key = ? "
            f"AND status IN ({_COUNTED_SQL}) AND created_us > ? AND id > ?",
            (budget.id, key, now_us - budget.window_seconds * 1_000_000, after_row),
        ).fetchone()
        return int(row[0])

    def reserve(
        self, call: ToolCall, impact: Impact, budgets: Sequence[Budget]
    ) -> BudgetReservation | BudgetDenial:
        """Hold one slot in every budget that counts this call, or name the one that is spent."""
        if impact not in IMPACTS:
            raise BudgetStoreError(f"unknown impact {impact!r}: expected one of {list(IMPACTS)}")
        check_unique(budgets)
        applicable = [budget for budget in budgets if budget.applies_to(call.tool, impact)]
        with self._session(f"reserve budget for call {call.call_id!r}") as conn:
            if not applicable:
                return BudgetReservation((), call.call_id, call.run_id, call.tool)
            now_us = self._now_us()
            keyed = [(budget, budget.key_for(call)) for budget in applicable]
            with transaction(conn):
                denial = self._most_restrictive(conn, keyed, now_us)
                if denial is not None:
                    return denial  # rolls back: nothing written
                ids = []
                for budget, key in keyed:
                    cursor = conn.execute(
                        f"INSERT INTO budget_ledger ({_LEDGER_COLUMNS}) "
                        "VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'reserved', ?, ?, NULL, NULL)",
                        (
                            budget.id, budget.scope, key, call.call_id, call.run_id, call.tool,
                            impact, call.principal.actor, call.principal.agent,
                            call.principal.team, now_us, _iso(now_us),
                        ),
                    )  # fmt: skip
                    if cursor.lastrowid is None:
                        raise BudgetStoreError("the ledger returned no row id")
                    ids.append(int(cursor.lastrowid))
                conn.execute("COMMIT")
            return BudgetReservation(
                tuple(ids), call.call_id, call.run_id, call.tool, tuple(b.id for b in applicable)
            )

    def check(
        self, call: ToolCall, impact: Impact, budgets: Sequence[Budget]
    ) -> BudgetDenial | None:
        """The denial `reserve` would give right now, or None; writes nothing.

        For a call held for approval: refuse early when its budget is already spent. It
        reserves nothing, so the approved call must still `reserve` before it executes.
        """
        if impact not in IMPACTS:
            raise BudgetStoreError(f"unknown impact {impact!r}: expected one of {list(IMPACTS)}")
        check_unique(budgets)
        applicable = [budget for budget in budgets if budget.applies_to(call.tool, impact)]
        with self._session(f"check budget for call {call.call_id!r}") as conn:
            if not applicable:
                return None
            now_us = self._now_us()
            keyed = [(budget, budget.key_for(call)) for budget in applicable]
            with transaction(conn, "BEGIN"):
                return self._most_restrictive(conn, keyed, now_us)

    @classmethod
    def _most_restrictive(
        cls, conn: sqlite3.Connection, keyed: Sequence[tuple[Budget, str]], now_us: int
    ) -> BudgetDenial | None:
        exhausted = []
        for budget, key in keyed:
            used = cls._used(conn, budget, key, now_us)
            if used >= budget.limit:
                exhausted.append(
                    BudgetDenial(
                        budget.id, budget.scope, key, used, budget.limit, budget.window_seconds
                    )
                )
        return min(exhausted, key=restrictiveness) if exhausted else None

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
            with transaction(conn):
                rows = conn.execute(
                    f"SELECT id, status, call_id, run_id FROM budget_ledger WHERE id IN ({marks})",
                    reservation.ids,
                ).fetchall()
                found = {int(row[0]): row for row in rows}
                missing = [i for i in reservation.ids if i not in found]
                if missing:
                    raise BudgetStoreError(f"no ledger rows {missing} to settle")
                for row_id, status, call_id, run_id in found.values():
                    if (call_id, run_id) != (reservation.call_id, reservation.run_id):
                        raise BudgetStoreError(
                            f"ledger row {row_id} belongs to call {call_id!r} of run {run_id!r}"
                        )
                    if status not in ("reserved", outcome):
                        raise BudgetStoreError(
                            f"ledger row {row_id} was already settled as {status}, not {outcome}"
                        )
                conn.execute(
                    "UPDATE budget_ledger SET status = ?, settled_us = ?, settled_at = ? "
                    f"WHERE id IN ({marks}) AND status = 'reserved'",
                    (outcome, now_us, _iso(now_us), *reservation.ids),
                )
                conn.execute("COMMIT")

    def usage(self, call: ToolCall, budgets: Sequence[Budget]) -> dict[str, int]:
        """{budget id: used} for each budget, under the key this call would be charged to."""
        check_unique(budgets)
        with self._session(f"read budget usage for call {call.call_id!r}") as conn:
            now_us = self._now_us()
            with transaction(conn, "BEGIN"):
                return {
                    budget.id: self._used(conn, budget, budget.key_for(call), now_us)
                    for budget in budgets
                }

    def status(self, budgets: Sequence[Budget]) -> list[BudgetStatus]:
        """One row per (budget, key) seen in the ledger or its resets, sorted by budget, key."""
        check_unique(budgets)
        out: list[BudgetStatus] = []
        with self._session("read budget status") as conn:
            now_us = self._now_us()
            with transaction(conn, "BEGIN"):
                for budget in sorted(budgets, key=lambda b: b.id):
                    keys = conn.execute(
                        "SELECT key FROM budget_ledger WHERE budget_id = ? "
                        "UNION SELECT key FROM budget_resets WHERE budget_id = ? ORDER BY key",
                        (budget.id, budget.id),
                    ).fetchall()
                    for (key,) in keys:
                        used = self._used(conn, budget, str(key), now_us)
                        _, at_us = self._watermark(conn, budget.id, str(key))
                        out.append(
                            BudgetStatus(
                                budget_id=budget.id,
                                scope=budget.scope,
                                key=str(key),
                                used=used,
                                limit=budget.limit,
                                window_seconds=budget.window_seconds,
                                remaining=max(budget.limit - used, 0),
                                watermark=None if at_us is None else from_us(at_us),
                            )
                        )
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
            with transaction(conn):
                previous, _ = self._watermark(conn, budget_id, key)
                charged = conn.execute(
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
                known = conn.execute(
                    "SELECT by FROM budget_resets UNION SELECT approved_by FROM budget_resets "
                    "UNION SELECT actor FROM budget_ledger UNION SELECT agent FROM budget_ledger"
                )
                refuse_look_alikes([str(name) for (name,) in known], by, approved_by)
                (after_row,) = conn.execute(
                    "SELECT COALESCE(MAX(id), 0) FROM budget_ledger"
                ).fetchone()
                cursor = conn.execute(
                    f"INSERT INTO budget_resets ({_RESET_COLUMNS}) "
                    "VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        budget_id, key, now_us, _iso(now_us), by.strip(), approved_by.strip(),
                        reason.strip(), int(after_row),
                    ),
                )  # fmt: skip
                reset_id = cursor.lastrowid
                if reset_id is None:
                    raise BudgetStoreError("the reset returned no row id")
                conn.execute("COMMIT")
        return BudgetReset(
            id=int(reset_id),
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
            rows = conn.execute(
                f"SELECT {_LEDGER_COLUMNS} FROM budget_ledger{clause} ORDER BY id", params
            ).fetchall()
            return [_ledger_row(row) for row in rows]

    def resets(self) -> list[BudgetReset]:
        """Every reset ever made, oldest first."""
        with self._session("read budget resets") as conn:
            rows = conn.execute(f"SELECT {_RESET_COLUMNS} FROM budget_resets ORDER BY id")
            return [
                BudgetReset(
                    id=int(row_id),
                    budget_id=str(budget_id),
                    key=str(key),
                    at=from_us(int(at_us)),
                    by=str(by),
                    approved_by=str(approved_by),
                    reason=str(reason),
                    after_row=int(after_row),
                )
                for row_id, budget_id, key, at_us, _, by, approved_by, reason, after_row in rows
            ]


def _ledger_row(row: tuple[object, ...]) -> LedgerRow:
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
