"""Persisted approval requests in SQLite: the one race arbiter for human approval.

Every state change is a single conditional `UPDATE ... WHERE id = ? AND status = 'pending'`
(plus `consumed = 0` for execution). Reviewers in other processes, the expiry sweep and startup
reconciliation all go through it, so exactly one of them wins and the others learn who did.
The file is durable per its mode (`fsync` or `os`, see governance.stores._sqlite);
The memory backend (`MemoryApprovalStore`) keeps the same arbiter in Python under one lock.
"""

from __future__ import annotations

import builtins
import contextlib
import datetime as dt
import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, get_args

from governance.core._canonical import canonical_json
from governance.core._clock import Clock, SystemClock
from governance.core._contracts import RISKS, Principal, Risk
from governance.core._errors import GovernanceError
from governance.core._identity import look_alike, name_problem, same_person
from governance.core._process_token import current_process_token, process_is_alive
from governance.screening._redaction import redact
from governance.stores._private_file import ensure_private
from governance.stores._sealing import SealError, seal, unseal
from governance.stores._sqlite import (
    Durability,
    SqliteStore,
    check_durability,
    open_connection,
    transaction,
    utc_text,
)

ApprovalStatus = Literal["pending", "approved", "rejected", "expired", "cancelled"]
APPROVAL_STATUSES: Final[tuple[ApprovalStatus, ...]] = get_args(ApprovalStatus)
# A status plus what became of an approved request once its single execution was used.
ApprovalState = ApprovalStatus | Literal["executing", "executed", "consumed"]

EXPIRED_REASON: Final = "expired"
# The audit events a reviewer's decision awaits (`in_flight`) until `recorded`.
_DECISIONS: Final = frozenset({"approval.approved", "approval.rejected"})
RESTARTED_REASON: Final = "process restarted"

_SCHEMA: Final = (
    """
    CREATE TABLE IF NOT EXISTS approvals (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        run_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL,
        arguments_digest TEXT NOT NULL,
        actor TEXT NOT NULL,
        agent TEXT NOT NULL,
        team TEXT NOT NULL,
        policy_digest TEXT NOT NULL,
        rule_ids TEXT NOT NULL,
        reason TEXT NOT NULL,
        risk TEXT NOT NULL,
        status TEXT NOT NULL
            CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'cancelled')),
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        decided_by TEXT,
        decided_at TEXT,
        comment TEXT,
        approved_arguments TEXT,
        status_reason TEXT,
        consumed INTEGER NOT NULL DEFAULT 0 CHECK (consumed IN (0, 1)),
        waiter TEXT,
        sealed_arguments TEXT,
        sealed_approved_arguments TEXT,
        in_flight TEXT,
        in_flight_by TEXT,
        in_doubt TEXT,
        CHECK (consumed = 0 OR status = 'approved')
    )
    """,
    "CREATE INDEX IF NOT EXISTS approvals_by_status ON approvals (status, expires_at)",
    "CREATE INDEX IF NOT EXISTS approvals_by_run ON approvals (run_id, seq)",
)
_COLUMNS: Final = (
    "id, run_id, call_id, tool, arguments, arguments_digest, actor, agent, team, policy_digest, "
    "rule_ids, reason, risk, status, created_at, expires_at, decided_by, decided_at, comment, "
    "approved_arguments, status_reason, consumed, waiter, sealed_arguments, "
    "sealed_approved_arguments, in_flight, in_doubt"
)
# Added after the first release: an older file gets them (and its rows sealed) when opened.
_LATER_COLUMNS: Final = (
    "sealed_arguments", "sealed_approved_arguments", "in_flight", "in_flight_by", "in_doubt",
)  # fmt: skip
# The arbiter: a decision lands only on a request that is still pending and not yet due.
# A request whose `approval.required` is not yet on the audit chain cannot be reviewed.
_DECIDE: Final = (
    "UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?, comment = ?, "
    "approved_arguments = ?, sealed_approved_arguments = ?, status_reason = ?, "
    "in_flight = ?, in_flight_by = ? "
    "WHERE id = ? AND status = 'pending' AND expires_at > ? "
    "AND (? = 0 OR COALESCE(in_flight, '') != 'approval.required')"
)
_EXPIRE_ONE: Final = (
    "UPDATE approvals SET status = 'expired', decided_at = ?, status_reason = ? "
    "WHERE id = ? AND status = 'pending' AND expires_at <= ?"
)
# A new row: `seq` (the id's number) and _COLUMNS, then who awaits its audit event.
INSERT: Final = (
    f"INSERT INTO approvals (seq, {_COLUMNS}, in_flight_by) VALUES ({', '.join(['?'] * 29)})"
)


class ApprovalError(GovernanceError):
    """Base of the approval store's errors."""


class ApprovalNotFound(ApprovalError):
    """No request has this id (in this store file)."""


class ApprovalConflict(ApprovalError):
    """The request is no longer pending (or not approved, for execution): someone else won."""

    def __init__(self, approval_id: str, current_status: ApprovalStatus, message: str) -> None:
        self.approval_id = approval_id
        self.current_status: ApprovalStatus = current_status
        super().__init__(message)


class SelfApprovalError(ApprovalError):
    """The proposing actor tried to approve their own request."""


class IdentityRefused(ApprovalError):
    """A reviewer name that is malformed or a look-alike of a different existing name."""


class ApprovalStoreError(ApprovalError):
    """The store could not be read or written (SQLite or OS failure): callers fail closed."""


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """One held call as stored: what was proposed, what the reviewer saw, and what became of it."""

    id: str
    run_id: str
    call_id: str
    tool: str
    # Raw, as proposed: what the call executes with. Never print it; show `shown_arguments`.
    arguments: dict[str, Any] = field(repr=False)
    arguments_digest: str
    actor: str
    agent: str
    team: str
    policy_digest: str
    rule_ids: tuple[str, ...]
    reason: str
    risk: Risk
    status: ApprovalStatus
    created_at: dt.datetime
    expires_at: dt.datetime
    decided_by: str | None
    decided_at: dt.datetime | None
    comment: str | None
    approved_arguments: dict[str, Any] | None = field(repr=False)
    status_reason: str | None
    consumed: bool
    waiter: str | None
    # Redacted copies: what listings, `proctor approvals show` and any display use.
    shown_arguments: dict[str, Any]
    shown_approved_arguments: dict[str, Any] | None
    # Why the raw arguments cannot be trusted (a refusal reason code), or None.
    arguments_problem: str | None
    # The audit event still awaited after the last state change, and any crash finding.
    in_flight: str | None
    in_doubt: str | None

    @property
    def state(self) -> ApprovalState:
        """What became of the request, for display: an approved one that was used is
        `executed` (or `executing` while its outcome is still being recorded, `consumed` when
        a crash left its effect in doubt), not just `approved`."""
        if self.status != "approved" or not self.consumed:
            return self.status
        if self.in_doubt is not None:
            return "consumed"
        return "executing" if self.in_flight is not None else "executed"

    @property
    def effective_arguments(self) -> dict[str, Any]:
        """What an approved call runs with: the reviewer's edit, else the arguments as proposed."""
        return self.approved_arguments if self.approved_arguments is not None else self.arguments

    @property
    def shown_effective_arguments(self) -> dict[str, Any]:
        """The redacted form of `effective_arguments`, for display."""
        edited = self.shown_approved_arguments
        return edited if edited is not None else self.shown_arguments


def _require_text(name: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, not {value!r}")
    return value


def _json_object(name: str, value: object) -> str:
    """Canonical JSON text of a mapping; ValueError when it is not a JSON object."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a mapping, not {type(value).__name__}")
    try:
        return canonical_json(dict(value)).decode("utf-8")
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} cannot be stored as JSON: {exc}") from exc


def _aad(rid: str, run_id: str, call_id: str, tool: str, digest: str, column: str) -> bytes:
    """What a sealed value is bound to: its request, its proposal digest and its column."""
    bound = {"id": rid, "run_id": run_id, "call_id": call_id, "tool": tool, "column": column}
    return canonical_json({**bound, "arguments_digest": digest})


def _redacted_text(raw_json: str) -> str:
    """The display copy of stored JSON: secrets masked by key name and by shape."""
    return canonical_json(redact(json.loads(raw_json))).decode("utf-8")


def _owner(awaiting: str | None) -> str | None:
    return current_process_token() if awaiting is not None else None


class ApprovalRows:
    """What every approval backend shares: checking a proposal, sealing raw arguments, reading
    a stored row back, the reviewer checks and the loser's error. Rows are kept as the SQLite
    columns hold them (text), so a request reads the same from either backend."""

    _where: str  # what messages name: the file, or `memory:`

    def __init__(self, *, clock: Clock | None, default_ttl_seconds: float, key: bytes | None):
        self._key = key or None
        self._clock: Clock = clock or SystemClock()
        self.default_ttl_seconds = self._check_ttl(default_ttl_seconds)
        self._closed = threading.Event()  # set on close: wakes every waiter

    @staticmethod
    def _check_ttl(ttl: float) -> float:
        if isinstance(ttl, bool) or not isinstance(ttl, int | float):
            raise ValueError(f"ttl must be a number of seconds, not {ttl!r}")
        if not math.isfinite(ttl) or ttl <= 0:
            raise ValueError(f"ttl must be a positive finite number of seconds, not {ttl!r}")
        return float(ttl)

    def now(self) -> dt.datetime:
        """The store's clock, in aware UTC: what expiry is judged against."""
        now = self._clock.now()
        if now.tzinfo is None:
            raise ValueError("the clock returned a naive datetime; approval times must be UTC")
        return now.astimezone(dt.UTC)

    def _now(self) -> str:
        return utc_text(self.now())

    def _not_found(self, approval_id: str) -> ApprovalNotFound:
        return ApprovalNotFound(f"no approval request {approval_id!r} in {self._where}")

    def _parse(self, row: tuple[Any, ...]) -> ApprovalRequest:
        rid = row[0]
        try:
            (
                rid, run_id, call_id, tool, arguments, arguments_digest, actor, agent, team,
                policy_digest, rule_ids, reason, risk, status, created_at, expires_at,
                decided_by, decided_at, comment, approved_arguments, status_reason, consumed,
                waiter, sealed_arguments, sealed_approved_arguments, in_flight, in_doubt,
            ) = row  # fmt: skip
            shown = json.loads(arguments)
            shown_edit = json.loads(approved_arguments) if approved_arguments is not None else None
            rules = json.loads(rule_ids)
            if not isinstance(shown, dict) or not (
                shown_edit is None or isinstance(shown_edit, dict)
            ):
                raise ValueError("arguments are not a JSON object")
            bound = (rid, run_id, call_id, tool, arguments_digest)
            has_edit = approved_arguments is not None or sealed_approved_arguments is not None
            args, edited, problem = self._open(
                bound, sealed_arguments, sealed_approved_arguments, has_edit
            )
            if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
                raise ValueError("rule_ids is not a JSON list of strings")
            if risk not in RISKS or status not in APPROVAL_STATUSES:
                raise ValueError(f"unknown risk {risk!r} or status {status!r}")
            return ApprovalRequest(
                id=rid,
                run_id=run_id,
                call_id=call_id,
                tool=tool,
                arguments=args,
                arguments_digest=arguments_digest,
                actor=actor,
                agent=agent,
                team=team,
                policy_digest=policy_digest,
                rule_ids=tuple(rules),
                reason=reason,
                risk=risk,
                status=status,
                created_at=dt.datetime.fromisoformat(created_at),
                expires_at=dt.datetime.fromisoformat(expires_at),
                decided_by=decided_by,
                decided_at=dt.datetime.fromisoformat(decided_at) if decided_at else None,
                comment=comment,
                approved_arguments=edited,
                status_reason=status_reason,
                consumed=bool(consumed),
                waiter=waiter,
                shown_arguments=shown,
                shown_approved_arguments=shown_edit,
                arguments_problem=problem,
                in_flight=in_flight,
                in_doubt=in_doubt,
            )
        except (TypeError, ValueError) as exc:
            raise ApprovalStoreError(
                f"approval request {rid!r} in {self._where} is malformed: {exc}"
            ) from exc

    def _open(
        self,
        bound: tuple[str, str, str, str, str],
        sealed: str | None,
        sealed_edit: str | None,
        has_edit: bool,
    ) -> tuple[dict[str, Any], dict[str, Any] | None, str | None]:
        """The raw arguments and edit; on any doubt ({}, None, reason code): never executable."""
        try:
            args = json.loads(unseal(sealed, self._key, _aad(*bound, "arguments")))
            edited = None
            if has_edit:
                aad = _aad(*bound, "approved_arguments")
                edited = json.loads(unseal(sealed_edit, self._key, aad))
        except SealError as exc:
            return {}, None, exc.reason
        except ValueError:
            return {}, None, "approval_arguments_tampered"
        if not isinstance(args, dict) or not (edited is None or isinstance(edited, dict)):
            return {}, None, "approval_arguments_tampered"
        return args, edited, None

    def _proposal(
        self,
        *,
        run_id: str,
        call_id: str,
        tool: str,
        arguments: Mapping[str, Any],
        arguments_digest: str,
        principal: Principal,
        policy_digest: str,
        rule_ids: Sequence[str],
        reason: str,
        risk: Risk,
        ttl_seconds: float | None,
        waiter: str | None,
    ) -> tuple[str, str, dt.datetime, dt.datetime]:
        """A checked proposal: (raw JSON, redacted JSON, created, expires); ValueError if not."""
        for name, value in (
            ("run_id", run_id), ("call_id", call_id), ("tool", tool),
            ("arguments_digest", arguments_digest), ("policy_digest", policy_digest),
            ("reason", reason), ("principal.actor", principal.actor),
        ):  # fmt: skip
            _require_text(name, value)
        if not isinstance(principal.agent, str) or not isinstance(principal.team, str):
            raise ValueError("principal.agent and principal.team must be strings")
        if isinstance(rule_ids, str) or not all(isinstance(r, str) for r in rule_ids):
            raise ValueError(f"rule_ids must be a sequence of strings, not {rule_ids!r}")
        if risk not in RISKS:
            raise ValueError(f"unknown risk {risk!r}; use one of {RISKS}")
        if waiter is not None:
            _require_text("waiter", waiter)
        ttl = self.default_ttl_seconds if ttl_seconds is None else self._check_ttl(ttl_seconds)
        args_text = _json_object("arguments", arguments)
        shown_text = _redacted_text(args_text)
        now = self.now()
        try:
            expires = now + dt.timedelta(seconds=ttl)
        except OverflowError as exc:
            raise ValueError(f"ttl {ttl!r} s is too far in the future") from exc
        return args_text, shown_text, now, expires

    def _seal(self, bound: tuple[str, str, str, str, str], args_text: str) -> str:
        """Raw arguments sealed to their request (id, run, call, tool, digest)."""
        return seal(args_text, self._key, _aad(*bound, "arguments"))

    def _edit(
        self, current: ApprovalRequest, approved_arguments: str | None
    ) -> tuple[str | None, str | None]:
        """A reviewer's edit as stored: (redacted copy, sealed raw), or (None, None)."""
        if approved_arguments is None:
            return None, None
        bound = (current.id, current.run_id, current.call_id, current.tool)
        aad = _aad(*bound, current.arguments_digest, "approved_arguments")
        return _redacted_text(approved_arguments), seal(approved_arguments, self._key, aad)

    @staticmethod
    def _conflict_unrecorded(approval_id: str) -> ApprovalConflict:
        """A review of a request whose `approval.required` is not yet on the audit chain."""
        return ApprovalConflict(
            approval_id,
            "pending",
            f"{approval_id} is not yet recorded on the audit chain; try again shortly",
        )

    @staticmethod
    def _settled(request: ApprovalRequest) -> bool:
        """What `wait` waits for: decided, and the decision on the audit chain. A waiter woken
        between a reviewer's decision and its `approval.approved` record would find the
        approval unusable (`approval_unrecorded`) and give up on a call that was approved."""
        recording = request.in_flight in _DECISIONS and not request.consumed
        return request.status != "pending" and not recording

    @staticmethod
    def _require_finding(finding: str) -> None:
        _require_text("finding", finding)

    @staticmethod
    def _owner(awaiting: str | None) -> str | None:
        return current_process_token() if awaiting is not None else None

    @staticmethod
    def _conflict(request: ApprovalRequest) -> ApprovalConflict:
        """The loser's error, naming the state the winner left."""
        rid, status = request.id, request.status
        if status in ("approved", "rejected"):
            message = f"{rid} is already {status} by {request.decided_by}"
        elif status == "expired":
            why = request.status_reason
            message = f"{rid} has expired" + (f" ({why})" if why and why != EXPIRED_REASON else "")
        elif status == "cancelled":
            message = f"{rid} was cancelled by {request.decided_by}"
            if request.status_reason:
                message += f": {request.status_reason}"
        else:
            message = f"{rid} is still pending"
        return ApprovalConflict(rid, status, message)

    @staticmethod
    def _check_reviewer(
        request: ApprovalRequest, reviewer: str, known: Sequence[str], *, refuse_actor: bool
    ) -> None:
        """Reviewers are compared by skeleton: a look-alike of the proposer is the proposer."""
        problem = name_problem(reviewer)
        if problem is not None:
            raise IdentityRefused(f"reviewer name refused: {problem}")
        if refuse_actor and same_person(reviewer, request.actor):
            same = reviewer.strip() == request.actor.strip()
            looks = "" if same else f" ({ascii(reviewer)} looks like it)"
            raise SelfApprovalError(
                f"{request.id} was proposed by {request.actor!r}{looks}, who cannot approve it; "
                "another reviewer must"
            )
        other = look_alike(reviewer, known)
        if other is not None:
            raise IdentityRefused(
                f"reviewer {ascii(reviewer)} looks like the existing name {other!r} but is spelled "
                "differently; use the exact name (look-alike names are one person, never two)"
            )

    def _decide(
        self,
        approval_id: str,
        status: ApprovalStatus,
        *,
        decided_by: str,
        comment: str | None,
        status_reason: str | None = None,
        approved_arguments: str | None = None,
        refuse_actor: bool = False,
        check_name: bool = False,
        awaiting: str | None = None,
    ) -> ApprovalRequest:
        raise NotImplementedError

    def approve(
        self,
        approval_id: str,
        reviewer: str,
        *,
        arguments: Mapping[str, Any] | None = None,
        comment: str | None = None,
        awaiting: str | None = None,
    ) -> ApprovalRequest:
        """Approve a pending request, optionally with edited arguments (kept apart from the
        proposal). The proposing actor cannot; a lost race raises ApprovalConflict."""
        _require_text("reviewer", reviewer)
        edited = None if arguments is None else _json_object("approved arguments", arguments)
        return self._decide(
            approval_id,
            "approved",
            decided_by=reviewer,
            comment=comment,
            approved_arguments=edited,
            refuse_actor=True,
            check_name=True,
            awaiting=awaiting,
        )

    def reject(
        self, approval_id: str, reviewer: str, *, comment: str, awaiting: str | None = None
    ) -> ApprovalRequest:
        """Reject a pending request; a rejection must say why."""
        _require_text("reviewer", reviewer)
        _require_text("comment", comment)
        return self._decide(
            approval_id,
            "rejected",
            decided_by=reviewer,
            comment=comment,
            check_name=True,
            awaiting=awaiting,
        )

    def cancel(self, approval_id: str, *, by: str, reason: str) -> ApprovalRequest:
        """Withdraw a pending request (for example its run ended); `reason` is kept."""
        _require_text("by", by)
        _require_text("reason", reason)
        return self._decide(
            approval_id, "cancelled", decided_by=by, comment=None, status_reason=reason
        )


class SqlApprovals(ApprovalRows):
    """The approval store in SQL, shared by the SQLite file and the PostgreSQL server: every
    state change is the one conditional UPDATE above, evaluated by the database. A backend
    supplies `_session(doing)` (a connection whose `execute(sql, params)` takes `?` markers and
    whose failures become ApprovalStoreError) and `_insert` (a new row under the next id)."""

    def _session(self, doing: str) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def _insert(self, conn: Any, row: Callable[[int], tuple[Any, ...]]) -> str:
        """Store `row(seq)` under the next sequence number, serialised across processes; its id."""
        raise NotImplementedError

    def _stored(self, waiter: str | None) -> str | None:
        """A checked waiter token as the `waiter` column keeps it."""
        return waiter

    # -- reading ---------------------------------------------------------------------------

    def _row(self, conn: Any, approval_id: str) -> ApprovalRequest:
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM approvals WHERE id = ?", (approval_id,)
        ).fetchone()
        if row is None:
            raise self._not_found(approval_id)
        return self._parse(row)

    def get(self, approval_id: str) -> ApprovalRequest:
        """The request as stored now. Raises ApprovalNotFound."""
        with self._session(f"read request {approval_id!r}") as conn:
            return self._row(conn, approval_id)

    def list(
        self, *, status: ApprovalStatus | None = None, run_id: str | None = None
    ) -> builtins.list[ApprovalRequest]:
        """Requests in creation order, optionally only one status and/or one run."""
        if status is not None and status not in APPROVAL_STATUSES:
            raise ValueError(f"unknown approval status {status!r}; use one of {APPROVAL_STATUSES}")
        where: builtins.list[str] = []
        params: builtins.list[str] = []
        if status is not None:
            where.append("status = ?")
            params.append(status)
        if run_id is not None:
            where.append("run_id = ?")
            params.append(run_id)
        sql = f"SELECT {_COLUMNS} FROM approvals"
        if where:
            sql += " WHERE " + " AND ".join(where)
        with self._session("list requests") as conn:
            rows = conn.execute(sql + " ORDER BY seq", params).fetchall()
            return [self._parse(row) for row in rows]

    # -- writing ---------------------------------------------------------------------------

    def create(
        self,
        *,
        run_id: str,
        call_id: str,
        tool: str,
        arguments: Mapping[str, Any],
        arguments_digest: str,
        principal: Principal,
        policy_digest: str,
        rule_ids: Sequence[str],
        reason: str,
        risk: Risk,
        ttl_seconds: float | None = None,
        waiter: str | None = None,
        awaiting: str | None = None,
    ) -> ApprovalRequest:
        """Persist a held call as `pending`, expiring after `ttl_seconds` (default from the store).

        `waiter` is the process token of an in-memory waiter (reconciled at restart); None
        makes the request detached: it survives restarts until decided or expired.
        `awaiting` names the audit event the caller writes next (`recorded` clears it); until
        then the request cannot be reviewed, and a crash leaves it for start-up reconciliation.
        """
        args_text, shown_text, now, expires = self._proposal(
            run_id=run_id, call_id=call_id, tool=tool, arguments=arguments,
            arguments_digest=arguments_digest, principal=principal, policy_digest=policy_digest,
            rule_ids=rule_ids, reason=reason, risk=risk, ttl_seconds=ttl_seconds, waiter=waiter,
        )  # fmt: skip

        def row(seq: int) -> tuple[Any, ...]:
            rid = f"apr-{seq}"
            sealed = self._seal((rid, run_id, call_id, tool, arguments_digest), args_text)
            return (
                seq, rid, run_id, call_id, tool, shown_text, arguments_digest,
                principal.actor, principal.agent, principal.team, policy_digest,
                json.dumps(list(rule_ids)), reason, risk, "pending", utc_text(now),
                utc_text(expires), None, None, None, None, None, 0, self._stored(waiter),
                sealed, None, awaiting, None, self._owner(awaiting),
            )  # fmt: skip

        with self._session(f"park call {call_id!r}") as conn:
            return self._row(conn, self._insert(conn, row))

    def _decide(
        self,
        approval_id: str,
        status: ApprovalStatus,
        *,
        decided_by: str,
        comment: str | None,
        status_reason: str | None = None,
        approved_arguments: str | None = None,
        refuse_actor: bool = False,
        check_name: bool = False,
        awaiting: str | None = None,
    ) -> ApprovalRequest:
        """One conditional update from `pending`; the loser gets ApprovalConflict."""
        now = self._now()
        review = status in ("approved", "rejected")
        with self._session(f"decide request {approval_id!r}") as conn:
            current = self._row(conn, approval_id)
            if refuse_actor or check_name:
                known = conn.execute(
                    "SELECT actor FROM approvals UNION SELECT decided_by FROM approvals "
                    "WHERE decided_by IS NOT NULL"
                )
                self._check_reviewer(
                    current, decided_by, [str(n) for (n,) in known], refuse_actor=refuse_actor
                )
            if review and current.status == "pending" and current.in_flight == "approval.required":
                raise self._conflict_unrecorded(approval_id)
            shown_edit, sealed_edit = self._edit(current, approved_arguments)
            won = conn.execute(
                _DECIDE,
                (
                    status, decided_by, now, comment, shown_edit, sealed_edit, status_reason,
                    awaiting, self._owner(awaiting), approval_id, now, int(review),
                ),
            ).rowcount  # fmt: skip
            if won == 1:
                return self._row(conn, approval_id)
            # Lost: either someone else decided, or it is due and the expiry is recorded first.
            conn.execute(_EXPIRE_ONE, (now, EXPIRED_REASON, approval_id, now))
            current = self._row(conn, approval_id)
        raise self._conflict(current)

    def expire_due(self) -> builtins.list[str]:
        """Mark every pending request past its expiry `expired`; the ids this call expired."""
        now = self._now()
        with self._session("expire due requests") as conn:
            rows = conn.execute(
                "UPDATE approvals SET status = 'expired', decided_at = ?, status_reason = ? "
                "WHERE status = 'pending' AND expires_at <= ? RETURNING seq, id",
                (now, EXPIRED_REASON, now),
            ).fetchall()
        return [str(rid) for _, rid in sorted(rows)]

    def reconcile(
        self, *, is_alive: Callable[[str], bool] = process_is_alive
    ) -> builtins.list[str]:
        """At startup: expire requests whose in-memory waiter's process is gone.

        Pending ones, and approved ones the dead waiter never consumed (only it could resume
        them: left `approved`, they would look runnable to a reviewer). An approved row whose
        approval is still being recorded (`in_flight`) is left for the audit reconciliation.
        Detached requests (no waiter) and this process's own requests are left alone.
        """
        me = current_process_token()
        with self._session("reconcile requests") as conn:
            rows = conn.execute(
                "SELECT id, waiter, status FROM approvals WHERE waiter IS NOT NULL AND "
                "(status = 'pending' OR (status = 'approved' AND consumed = 0 "
                "AND in_flight IS NULL)) ORDER BY seq"
            ).fetchall()
        verdicts: dict[str, bool] = {}
        for _, waiter, _ in rows:
            if waiter not in verdicts:
                verdicts[waiter] = waiter == me or is_alive(waiter)
        expired: builtins.list[str] = []
        now = self._now()
        with self._session("reconcile requests") as conn:
            for rid, waiter, status in rows:
                if verdicts[waiter]:
                    continue
                # Conditional on what was read: a request consumed or decided meanwhile stays.
                won = conn.execute(
                    "UPDATE approvals SET status = 'expired', decided_at = ?, status_reason = ? "
                    "WHERE id = ? AND status = ? AND waiter = ? AND (status = 'pending' "
                    "OR (consumed = 0 AND in_flight IS NULL))",
                    (now, RESTARTED_REASON, rid, status, waiter),
                ).rowcount
                if won == 1:
                    expired.append(str(rid))
        return expired

    def consume(self, approval_id: str, *, awaiting: str | None = None) -> bool:
        """Claim an approved, unexpired request for its one execution: True for exactly one caller.

        Expiry is part of the same conditional update, so an approval cannot be used after its
        deadline even if the caller's own check raced it. So is the audit record: an approval
        whose decision is not yet on the chain (or was found in doubt) cannot be used.
        """
        now = self._now()
        with self._session(f"consume request {approval_id!r}") as conn:
            won = conn.execute(
                "UPDATE approvals SET consumed = 1, in_flight = ?, in_flight_by = ? "
                "WHERE id = ? AND status = 'approved' AND consumed = 0 AND expires_at > ? "
                "AND in_flight IS NULL AND in_doubt IS NULL",
                (awaiting, self._owner(awaiting), approval_id, now),
            ).rowcount
            if won == 1:
                return True
            self._row(conn, approval_id)  # ApprovalNotFound for an unknown id
            return False

    # -- agreement with the audit chain ----------------------------------------------------

    def recorded(self, approval_id: str, event: str) -> None:
        """The awaited audit `event` is on the chain: the row and the chain agree again."""
        with self._session(f"note {event!r} for request {approval_id!r}") as conn:
            conn.execute(
                "UPDATE approvals SET in_flight = NULL, in_flight_by = NULL "
                "WHERE id = ? AND in_flight = ?",
                (approval_id, event),
            )

    def in_flight(
        self, *, is_alive: Callable[[str], bool] = process_is_alive
    ) -> builtins.list[ApprovalRequest]:
        """Requests still awaiting their audit event whose writer is gone (crashed): in doubt
        until start-up reconciliation checks the chain. A live writer's requests are skipped."""
        me = current_process_token()
        with self._session("list requests in flight") as conn:
            rows = conn.execute(
                "SELECT id, in_flight_by FROM approvals WHERE in_flight IS NOT NULL ORDER BY seq"
            ).fetchall()
        verdicts: dict[str, bool] = {}
        dead = []
        for rid, owner in rows:
            if owner is not None and owner not in verdicts:
                verdicts[owner] = owner == me or is_alive(owner)
            if owner is None or not verdicts[owner]:
                dead.append(str(rid))
        return [self.get(rid) for rid in dead]

    def mark_in_doubt(self, approval_id: str, finding: str) -> ApprovalRequest:
        """Record a crash finding on the request. A pending one is cancelled (nobody was asked
        through the audited path); an approved one can no longer be consumed."""
        self._require_finding(finding)
        now = self._now()
        with self._session(f"mark request {approval_id!r} in doubt") as conn:
            conn.execute(
                "UPDATE approvals SET in_doubt = ?, in_flight = NULL, in_flight_by = NULL "
                "WHERE id = ?",
                (finding, approval_id),
            )
            conn.execute(
                "UPDATE approvals SET status = 'cancelled', decided_by = 'proctor', "
                "decided_at = ?, status_reason = ? WHERE id = ? AND status = 'pending'",
                (now, f"in doubt: {finding}", approval_id),
            )
            return self._row(conn, approval_id)

    def wait(
        self, approval_id: str, *, timeout: float, poll_interval: float = 0.05
    ) -> ApprovalRequest:
        """Block until the request is decided and its decision recorded on the audit chain (see
        `_settled`), or `timeout` seconds pass; return it as is.

        A request that fell due meanwhile is marked expired on the way, so it reads as expired.
        """
        if math.isnan(timeout):
            raise ValueError("timeout must be a number of seconds")
        if not poll_interval > 0:
            raise ValueError("poll_interval must be positive")
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            now = self._now()
            with self._session(f"read request {approval_id!r}") as conn:
                conn.execute(_EXPIRE_ONE, (now, EXPIRED_REASON, approval_id, now))
                current = self._row(conn, approval_id)
            remaining = deadline - time.monotonic()
            if self._settled(current) or remaining <= 0:
                return current
            self._closed.wait(min(poll_interval, remaining))


def _create_schema(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA:
        conn.execute(statement)


class ApprovalStore(SqliteStore, SqlApprovals):
    """Approval requests in one SQLite file (WAL), shared by threads and processes.

    One connection per store behind a lock; other processes are arbitrated by SQLite itself.
    Ids are `apr-1`, `apr-2`, ... per file. Any SQLite or OS failure raises ApprovalStoreError.

    The file (and its WAL/SHM side files) is mode 0600. Raw arguments are kept only in the
    `sealed_*` columns, encrypted with `key` (see governance.stores._sealing) when one is given; the
    `arguments` and `approved_arguments` columns hold redacted copies for display.
    """

    _label = "approval store"
    _error = ApprovalStoreError

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        default_ttl_seconds: float = 300.0,
        busy_timeout: float = 5.0,
        key: bytes | None = None,
        durability: Durability = "fsync",
    ) -> None:
        self.path = Path(path)
        self._where = str(self.path)
        self.durability = check_durability(durability)
        ApprovalRows.__init__(self, clock=clock, default_ttl_seconds=default_ttl_seconds, key=key)
        SqliteStore.__init__(self)
        try:
            self._conn = self._connect(busy_timeout)
        except (sqlite3.Error, OSError) as exc:
            raise ApprovalStoreError(f"cannot open approval store {self.path}: {exc}") from exc

    def _connect(self, busy_timeout: float) -> sqlite3.Connection:
        ensure_private(self.path)
        # fsync: a decision (above all `consumed`) is on disk before anyone acts on it.
        conn = open_connection(self.path, durability=self.durability, busy_timeout=busy_timeout)
        try:
            # Freed pages are zeroed, so a row rewritten in place leaves no old copy behind.
            conn.execute("PRAGMA secure_delete = ON")
            _create_schema(conn)
            self._migrate(conn)
            ensure_private(self.path)  # the WAL and SHM files now exist
        except BaseException:
            conn.close()
            raise
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Bring a file from before sealing up to date: add the columns, seal the raw arguments
        the old `arguments` columns held in clear, and leave redacted copies in their place."""
        have = {str(row[1]) for row in conn.execute("PRAGMA table_info(approvals)")}
        if all(column in have for column in _LATER_COLUMNS) and not conn.execute(
            "SELECT 1 FROM approvals WHERE sealed_arguments IS NULL LIMIT 1"
        ).fetchone():
            return
        with transaction(conn):
            have = {str(row[1]) for row in conn.execute("PRAGMA table_info(approvals)")}
            for column in _LATER_COLUMNS:
                if column not in have:
                    conn.execute(f"ALTER TABLE approvals ADD COLUMN {column} TEXT")
            rows = conn.execute(
                "SELECT id, run_id, call_id, tool, arguments_digest, arguments, "
                "approved_arguments FROM approvals WHERE sealed_arguments IS NULL"
            ).fetchall()
            for rid, run_id, call_id, tool, digest, raw, raw_edit in rows:
                bound = (rid, run_id, call_id, tool, digest)
                conn.execute(
                    "UPDATE approvals SET sealed_arguments = ?, sealed_approved_arguments = ?, "
                    "arguments = ?, approved_arguments = ? WHERE id = ?",
                    (
                        seal(raw, self._key, _aad(*bound, "arguments")),
                        None
                        if raw_edit is None
                        else seal(raw_edit, self._key, _aad(*bound, "approved_arguments")),
                        _redacted_text(raw),
                        None if raw_edit is None else _redacted_text(raw_edit),
                        rid,
                    ),
                )
            conn.execute("COMMIT")

    def close(self) -> None:
        self._closed.set()  # wakes every waiter: nothing more will be decided here
        super().close()

    def _insert(self, conn: Any, row: Callable[[int], tuple[Any, ...]]) -> str:
        with transaction(conn):  # id allocation is serialised across processes
            last = conn.execute(
                "SELECT seq FROM sqlite_sequence WHERE name = 'approvals'"
            ).fetchone()
            values = row((int(last[0]) if last else 0) + 1)
            conn.execute(INSERT, values)
            conn.execute("COMMIT")
        return str(values[1])
