"""Approval requests in process memory, for scenario runs: the SQLite store's arbiter in Python.

Every state change is one check-and-set under the store's lock: the same conditions the SQLite
store's conditional UPDATEs test (`status = 'pending'` and not yet due for a decision;
approved, unconsumed, unexpired and agreed with the audit chain for `consume`), evaluated and
written while no other thread can look. So exactly one of the reviewers, the expiry sweep and
reconciliation wins, and `consume` is True once. Rows are kept as the SQLite columns hold them
(raw arguments sealed, redacted copies for display, UTC text times) and read back through the
same parser, so a request, an id (`apr-1`, ...) and an order read the same on either backend.
Only this store object sees its requests: there is no file for a CLI to open.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

from governance.core._clock import Clock
from governance.core._closing import Closing
from governance.core._contracts import Principal, Risk
from governance.core._process_token import current_process_token, process_is_alive
from governance.stores._approvals import (
    APPROVAL_STATUSES,
    EXPIRED_REASON,
    RESTARTED_REASON,
    ApprovalRequest,
    ApprovalRows,
    ApprovalStatus,
    ApprovalStoreError,
)
from governance.stores._sqlite import utc_text

_Row = dict[str, Any]
# The parser's column order (the SQLite store's SELECT list).
_COLUMNS: Final = (
    "id", "run_id", "call_id", "tool", "arguments", "arguments_digest", "actor", "agent", "team",
    "policy_digest", "rule_ids", "reason", "risk", "status", "created_at", "expires_at",
    "decided_by", "decided_at", "comment", "approved_arguments", "status_reason", "consumed",
    "waiter", "sealed_arguments", "sealed_approved_arguments", "in_flight", "in_doubt",
)  # fmt: skip


class MemoryApprovalStore(ApprovalRows, Closing):
    """Requests in a dict (insertion order is creation order), behind one lock."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        default_ttl_seconds: float = 300.0,
        key: bytes | None = None,
    ) -> None:
        self._where = "memory:"
        super().__init__(clock=clock, default_ttl_seconds=default_ttl_seconds, key=key)
        self._lock = threading.Lock()
        self._rows: dict[str, _Row] | None = {}

    @contextlib.contextmanager
    def _session(self) -> Iterator[dict[str, _Row]]:
        with self._lock:
            if self._rows is None:
                raise ApprovalStoreError("approval store memory: is closed")
            yield self._rows

    def close(self) -> None:
        self._closed.set()  # wakes every waiter: nothing more will be decided here
        with self._lock:
            self._rows = None

    def _read(self, row: _Row) -> ApprovalRequest:
        return self._parse(tuple(row[column] for column in _COLUMNS))

    def _row(self, rows: dict[str, _Row], approval_id: str) -> _Row:
        row = rows.get(approval_id)
        if row is None:
            raise self._not_found(approval_id)
        return row

    # -- reading ---------------------------------------------------------------------------

    def get(self, approval_id: str) -> ApprovalRequest:
        """The request as stored now. Raises ApprovalNotFound."""
        with self._session() as rows:
            return self._read(self._row(rows, approval_id))

    def list(
        self, *, status: ApprovalStatus | None = None, run_id: str | None = None
    ) -> builtins.list[ApprovalRequest]:
        """Requests in creation order, optionally only one status and/or one run."""
        if status is not None and status not in APPROVAL_STATUSES:
            raise ValueError(f"unknown approval status {status!r}; use one of {APPROVAL_STATUSES}")
        with self._session() as rows:
            return [
                self._read(row)
                for row in rows.values()
                if (status is None or row["status"] == status)
                and (run_id is None or row["run_id"] == run_id)
            ]

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
        """Keep a held call as `pending` (see ApprovalStore.create)."""
        args_text, shown_text, now, expires = self._proposal(
            run_id=run_id, call_id=call_id, tool=tool, arguments=arguments,
            arguments_digest=arguments_digest, principal=principal, policy_digest=policy_digest,
            rule_ids=rule_ids, reason=reason, risk=risk, ttl_seconds=ttl_seconds, waiter=waiter,
        )  # fmt: skip
        with self._session() as rows:
            rid = f"apr-{len(rows) + 1}"  # rows are never removed: the count is the sequence
            sealed = self._seal((rid, run_id, call_id, tool, arguments_digest), args_text)
            row: _Row = {
                "id": rid, "run_id": run_id, "call_id": call_id, "tool": tool,
                "arguments": shown_text, "arguments_digest": arguments_digest,
                "actor": principal.actor, "agent": principal.agent, "team": principal.team,
                "policy_digest": policy_digest, "rule_ids": json.dumps(list(rule_ids)),
                "reason": reason, "risk": risk, "status": "pending",
                "created_at": utc_text(now), "expires_at": utc_text(expires),
                "decided_by": None, "decided_at": None, "comment": None,
                "approved_arguments": None, "status_reason": None, "consumed": 0,
                "waiter": waiter, "sealed_arguments": sealed, "sealed_approved_arguments": None,
                "in_flight": awaiting, "in_doubt": None, "in_flight_by": self._owner(awaiting),
            }  # fmt: skip
            rows[rid] = row
            return self._read(row)

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
        """One check-and-set from `pending` under the lock; the loser gets ApprovalConflict."""
        now = self._now()
        review = status in ("approved", "rejected")
        with self._session() as rows:
            row = self._row(rows, approval_id)
            current = self._read(row)
            if refuse_actor or check_name:
                known = {r["actor"] for r in rows.values()}
                known.update(r["decided_by"] for r in rows.values() if r["decided_by"] is not None)
                self._check_reviewer(current, decided_by, sorted(known), refuse_actor=refuse_actor)
            recording = row["in_flight"] == "approval.required"
            if review and row["status"] == "pending" and recording:
                raise self._conflict_unrecorded(approval_id)
            shown_edit, sealed_edit = self._edit(current, approved_arguments)
            if row["status"] == "pending" and row["expires_at"] > now:
                row.update(
                    status=status, decided_by=decided_by, decided_at=now, comment=comment,
                    approved_arguments=shown_edit, sealed_approved_arguments=sealed_edit,
                    status_reason=status_reason, in_flight=awaiting,
                    in_flight_by=self._owner(awaiting),
                )  # fmt: skip
                return self._read(row)
            # Lost: either someone else decided, or it is due and the expiry is recorded first.
            self._expire_if_due(row, now)
            raise self._conflict(self._read(row))

    @staticmethod
    def _expire_if_due(row: _Row, now: str) -> bool:
        """The sweep's check-and-set for one row (call under the lock)."""
        if row["status"] == "pending" and row["expires_at"] <= now:
            row.update(status="expired", decided_at=now, status_reason=EXPIRED_REASON)
            return True
        return False

    def expire_due(self) -> builtins.list[str]:
        """Mark every pending request past its expiry `expired`; the ids this call expired."""
        now = self._now()
        with self._session() as rows:
            return [rid for rid, row in rows.items() if self._expire_if_due(row, now)]

    def reconcile(
        self, *, is_alive: Callable[[str], bool] = process_is_alive
    ) -> builtins.list[str]:
        """Expire pending, and approved unconsumed, requests whose in-memory waiter's process
        is gone (see ApprovalStore)."""
        me = current_process_token()

        def expirable(row: dict[str, Any]) -> bool:
            if row["waiter"] is None:
                return False
            if row["status"] == "approved":
                return not row["consumed"] and row["in_flight"] is None
            return bool(row["status"] == "pending")

        with self._session() as rows:
            waiting = [
                (rid, row["waiter"], row["status"]) for rid, row in rows.items() if expirable(row)
            ]
        verdicts: dict[str, bool] = {}
        for _, waiter, _ in waiting:
            if waiter not in verdicts:
                verdicts[waiter] = waiter == me or is_alive(waiter)
        expired: builtins.list[str] = []
        now = self._now()
        with self._session() as rows:
            for rid, waiter, status in waiting:
                row = rows[rid]
                if verdicts[waiter] or row["status"] != status or row["waiter"] != waiter:
                    continue  # alive, or someone decided it meanwhile: that one won
                if not expirable(row):
                    continue  # consumed (or being recorded) meanwhile
                row.update(status="expired", decided_at=now, status_reason=RESTARTED_REASON)
                expired.append(rid)
        return expired

    def consume(self, approval_id: str, *, awaiting: str | None = None) -> bool:
        """Claim an approved, unexpired, recorded request for its one execution: True once."""
        now = self._now()
        with self._session() as rows:
            row = self._row(rows, approval_id)
            if (
                row["status"] != "approved"
                or row["consumed"]
                or row["expires_at"] <= now
                or row["in_flight"] is not None
                or row["in_doubt"] is not None
            ):
                return False
            row.update(consumed=1, in_flight=awaiting, in_flight_by=self._owner(awaiting))
            return True

    # -- agreement with the audit chain ----------------------------------------------------

    def recorded(self, approval_id: str, event: str) -> None:
        """The awaited audit `event` is on the chain: the row and the chain agree again."""
        with self._session() as rows:
            row = rows.get(approval_id)
            if row is not None and row["in_flight"] == event:
                row.update(in_flight=None, in_flight_by=None)

    def in_flight(
        self, *, is_alive: Callable[[str], bool] = process_is_alive
    ) -> builtins.list[ApprovalRequest]:
        """Requests awaiting their audit event whose writer is gone (see ApprovalStore)."""
        me = current_process_token()
        with self._session() as rows:
            waiting = [
                (rid, row["in_flight_by"])
                for rid, row in rows.items()
                if row["in_flight"] is not None
            ]
        verdicts: dict[str, bool] = {}
        dead = []
        for rid, owner in waiting:
            if owner is not None and owner not in verdicts:
                verdicts[owner] = owner == me or is_alive(owner)
            if owner is None or not verdicts[owner]:
                dead.append(rid)
        return [self.get(rid) for rid in dead]

    def mark_in_doubt(self, approval_id: str, finding: str) -> ApprovalRequest:
        """Record a crash finding; a pending request is cancelled, an approved one unusable."""
        self._require_finding(finding)
        now = self._now()
        with self._session() as rows:
            row = self._row(rows, approval_id)
            row.update(in_doubt=finding, in_flight=None, in_flight_by=None)
            if row["status"] == "pending":
                row.update(
                    status="cancelled", decided_by="proctor", decided_at=now,
                    status_reason=f"in doubt: {finding}",
                )  # fmt: skip
            return self._read(row)

    def wait(
        self, approval_id: str, *, timeout: float, poll_interval: float = 0.05
    ) -> ApprovalRequest:
        """Block until the request is decided and its decision recorded on the audit chain (see
        `_settled`), or `timeout` seconds pass; return it as is."""
        if math.isnan(timeout):
            raise ValueError("timeout must be a number of seconds")
        if not poll_interval > 0:
            raise ValueError("poll_interval must be positive")
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            now = self._now()
            with self._session() as rows:
                row = self._row(rows, approval_id)
                self._expire_if_due(row, now)
                current = self._read(row)
            remaining = deadline - time.monotonic()
            if self._settled(current) or remaining <= 0:
                return current
            self._closed.wait(min(poll_interval, remaining))
