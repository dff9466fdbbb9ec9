"""The store seam: what the firewall, the gateway and the CLI need from approvals, budgets and
the audit log, and how a store URL picks the backend that provides them.

Backends today: the SQLite files (`sqlite`, the durable default, in `fsync` or `os` durability),
PostgreSQL (`postgresql://`, one database shared by every gateway, `proctor store migrate`)
and `memory` (nothing on disk, no fsync, for scenario runs: `MemoryAuditLog`,
`MemoryApprovalStore`, `MemoryBudgetLedger`, in Python, each arbitrated by one lock). A
server backend (PostgreSQL) plugs in by implementing the three protocols below; the contract
tests in tests/unit/governance/stores/ run against every backend. What a backend must keep:

- approvals: every state change is ONE conditional update (`... WHERE status = 'pending'`, and
  `consumed = 0` for execution) evaluated by the database (in memory: checked and set under
  the store's one lock), never a read-then-write across two steps; that update is the only
  arbiter between reviewers, the expiry sweep and reconciliation.
- budgets: `reserve` counts and inserts in one transaction that excludes every other writer
  of the same (budget, key) (no overshoot under any number of concurrent gateways: SQLite's
  `BEGIN IMMEDIATE`, PostgreSQL's advisory locks in ascending order); a reset inserts a
  watermark and never deletes a ledger row.
- audit: `seq` is per run, gap-free, allocated inside the appending transaction; `append_many`
  lands all its events or none. Timestamps come from the injected clock, never the server.
- every failure surfaces as the package's own error type (ApprovalStoreError,
  BudgetStoreError, AuditWriteError/GovernanceError), never a driver exception: callers fail
  closed on those.
"""

from __future__ import annotations

import builtins
import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, Protocol
from urllib.parse import parse_qs, urlsplit

from governance.core._contracts import Impact, Principal, Risk, ToolCall
from governance.core._errors import GovernanceError
from governance.stores._approvals import ApprovalRequest, ApprovalStatus
from governance.stores._audit import AuditEvent
from governance.stores._audit_chain import ChainVerdict
from governance.stores._budgets import (
    Budget,
    BudgetDenial,
    BudgetReservation,
    BudgetReset,
    BudgetStatus,
    LedgerRow,
    SettleOutcome,
)
from governance.stores._postgres import SCHEMES as POSTGRES_SCHEMES
from governance.stores._postgres import PostgresTarget
from governance.stores._postgres_dsn import DsnError, parse_dsn
from governance.stores._sqlite import DURABILITY_MODES, Durability, check_durability

StoreKind = Literal["sqlite", "memory", "postgres"]
STORE_URL_ENV: Final = "PROCTOR_STORE_URL"


class StoreUrlError(GovernanceError, ValueError):
    """A store URL or durability mode that names no backend; the message says what would."""


class ApprovalBackend(Protocol):
    """Held calls and their reviews. Ids are `apr-1`, `apr-2`, ... per store.

    May raise: ApprovalNotFound (unknown id), ApprovalConflict (the conditional update lost:
    someone else decided, or it expired), SelfApprovalError / IdentityRefused (reviewer),
    ValueError (malformed input), ApprovalStoreError (the store cannot answer; fail closed).
    Must never: decide a request that is not `pending`, let `consume` return True twice for one
    request, return raw arguments whose seal does not open (they come back `{}` with
    `arguments_problem` set), or store raw arguments unsealed.
    """

    def now(self) -> dt.datetime:
        """The store's clock in aware UTC: what expiry is judged against."""
        ...

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
        """Persist a held call as `pending`; `awaiting` marks it in flight until `recorded`."""
        ...

    def get(self, approval_id: str) -> ApprovalRequest: ...

    def list(
        self, *, status: ApprovalStatus | None = None, run_id: str | None = None
    ) -> builtins.list[ApprovalRequest]: ...

    def approve(
        self,
        approval_id: str,
        reviewer: str,
        *,
        arguments: Mapping[str, Any] | None = None,
        comment: str | None = None,
        awaiting: str | None = None,
    ) -> ApprovalRequest:
        """The conditional update `pending -> approved`; the loser gets ApprovalConflict."""
        ...

    def reject(
        self, approval_id: str, reviewer: str, *, comment: str, awaiting: str | None = None
    ) -> ApprovalRequest: ...

    def cancel(self, approval_id: str, *, by: str, reason: str) -> ApprovalRequest: ...

    def expire_due(self) -> builtins.list[str]:
        """Expire every pending request past its deadline; the ids this call expired."""
        ...

    def reconcile(self, *, is_alive: Callable[[str], bool] = ...) -> builtins.list[str]:
        """At start-up: expire pending requests whose waiting process is gone."""
        ...

    def consume(self, approval_id: str, *, awaiting: str | None = None) -> bool:
        """Claim an approved, unexpired, recorded request for its one execution."""
        ...

    def recorded(self, approval_id: str, event: str) -> None: ...

    def in_flight(
        self, *, is_alive: Callable[[str], bool] = ...
    ) -> builtins.list[ApprovalRequest]: ...

    def mark_in_doubt(self, approval_id: str, finding: str) -> ApprovalRequest: ...

    def wait(
        self, approval_id: str, *, timeout: float, poll_interval: float = 0.05
    ) -> ApprovalRequest: ...

    def close(self) -> None: ...


class BudgetBackend(Protocol):
    """The destructive-action ledger.

    May raise: BudgetStoreError (the store cannot answer or record: the guarded call must not
    execute), BudgetResetRefused (a reset without two distinct non-agent people and a reason),
    ValueError (an unknown settle outcome). Must never: overshoot a limit under concurrency,
    write anything on a denial or a `check`, delete or rewrite a ledger row other than settling
    a `reserved` row once, or stop counting an `unknown` outcome.
    """

    def reserve(
        self, call: ToolCall, impact: Impact, budgets: Sequence[Budget]
    ) -> BudgetReservation | BudgetDenial:
        """Hold one slot in every applicable budget, atomically, or name the one that is spent."""
        ...

    def check(
        self, call: ToolCall, impact: Impact, budgets: Sequence[Budget]
    ) -> BudgetDenial | None:
        """The denial `reserve` would give now, or None; writes nothing."""
        ...

    def settle(self, reservation: BudgetReservation, outcome: SettleOutcome) -> None: ...

    def usage(self, call: ToolCall, budgets: Sequence[Budget]) -> dict[str, int]: ...

    def status(self, budgets: Sequence[Budget]) -> list[BudgetStatus]: ...

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
        """Insert a two-person watermark; earlier ledger rows stay as evidence."""
        ...

    def ledger(self, budget_id: str | None = None, key: str | None = None) -> list[LedgerRow]: ...

    def resets(self) -> list[BudgetReset]: ...

    def close(self) -> None: ...


class AuditBackend(Protocol):
    """The per-run hash chains.

    `append`/`append_many` may raise only AuditWriteError (then nothing of the batch was
    recorded, and the firewall does not execute); readers raise GovernanceError. Must never:
    leave a gap or a fork in a run's `seq`, store `data` unredacted, or record part of a batch.
    """

    @property
    def alg(self) -> str: ...

    def digest_arguments(self, arguments: Mapping[str, Any]) -> str:
        """A keyed digest of raw arguments (AuditWriteError if they are not JSON)."""
        ...

    def append(self, run_id: str, kind: str, data: Mapping[str, Any]) -> AuditEvent: ...

    def append_many(
        self, run_id: str, events: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> list[AuditEvent]:
        """Several events of one run in one transaction (one fsync): all or none."""
        ...

    def run_ids(self) -> list[str]: ...

    def head(self, run_id: str) -> str | None: ...

    def events(self, run_id: str) -> list[AuditEvent]: ...

    def verify(self, run_id: str) -> ChainVerdict: ...

    def verify_all(self) -> list[ChainVerdict]: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class StoreSpec:
    """Which backend holds the stores: parsed from a store URL, validated once.

    `sqlite` with `directory=None` means the gateway's state directory.
    """

    kind: StoreKind
    directory: Path | None = None
    durability: Durability = "fsync"
    postgres: PostgresTarget | None = None  # kind == "postgres": the server

    @property
    def url(self) -> str:
        """The URL that parses back to this spec (a Postgres password included: never print
        it; `display` is for people)."""
        if self.kind == "memory":
            return "memory:"
        if self.postgres is not None:
            return self.postgres.dsn
        where = "" if self.directory is None else self.directory.as_posix()
        return f"sqlite://{where}?durability={self.durability}"

    @property
    def display(self) -> str:
        """The URL without a password."""
        return self.postgres.display if self.postgres is not None else self.url


def parse_store_url(url: str, *, durability: Durability | None = None) -> StoreSpec:
    """`sqlite` / `sqlite:///abs/dir[?durability=os]` / `memory:` (alias `ephemeral`) /
    `postgresql://user:password@host:port/dbname` (libpq's URL; `postgres://` too; read by
    libpq itself, so a password's `/ ? # @ % :` must be percent-encoded: a URL libpq would read
    otherwise is refused here, and no message repeats the URL).

    `durability` (when given) overrides the URL's. Raises StoreUrlError naming the fix.
    """
    if not isinstance(url, str) or not url.strip():
        raise StoreUrlError("the store URL is empty; use sqlite, sqlite:///<dir> or memory:")
    text = url.strip()
    modes = ", ".join(DURABILITY_MODES)
    if text in ("memory", "memory:", "ephemeral"):
        if durability is not None and durability != "fsync":
            raise StoreUrlError(
                f"durability {durability!r} applies to file stores; the memory store has none"
            )
        return StoreSpec("memory")
    if text == "sqlite":
        return StoreSpec("sqlite", None, _mode(durability or "fsync", modes))
    if text.split(":", 1)[0].lower() in POSTGRES_SCHEMES:
        if durability is not None:
            raise StoreUrlError(
                f"durability {durability!r} applies to SQLite file stores; PostgreSQL's "
                "durability is the server's (synchronous_commit)"
            )
        try:
            parse_dsn(text)  # as the driver will read it: refused now, not at connect
        except DsnError as exc:
            raise StoreUrlError(str(exc)) from None
        return StoreSpec("postgres", postgres=PostgresTarget(text))
    try:
        parts = urlsplit(text)
    except ValueError:  # e.g. a bad IPv6 host: its message would repeat the URL
        parts = None
    if parts is None or parts.scheme != "sqlite" or parts.netloc or parts.fragment:
        raise StoreUrlError(
            f"store URL {_safe(text)} is not understood; use sqlite, sqlite:///<dir> "
            "(an absolute directory), memory: or postgresql://user@host:port/dbname"
            + (" (a keyword/value DSN is not accepted: write it as a URL)" if "=" in text else "")
        )
    query = parse_qs(parts.query, keep_blank_values=True)
    unknown = sorted(set(query) - {"durability"})
    if unknown:
        raise StoreUrlError(
            f"store URL sqlite://{parts.path}: unknown option(s) {unknown}; only durability"
        )
    values = query.get("durability", [])
    if len(values) > 1:
        raise StoreUrlError(f"store URL sqlite://{parts.path}: durability is given more than once")
    chosen = durability or (values[0] if values else "fsync")
    directory = Path(parts.path) if parts.path not in ("", "/") else None
    return StoreSpec("sqlite", directory, _mode(chosen, modes))


def _mode(value: str, modes: str) -> Durability:
    try:
        return check_durability(value)
    except ValueError:
        raise StoreUrlError(f"unknown durability {value!r}; use one of {modes}") from None


def _safe(text: str) -> str:
    """How to name a URL that is not understood: it may be anything, a keyword/value DSN
    with a password included, so only a plain scheme is repeated, never the rest."""
    scheme = text.split(":", 1)[0] if ":" in text else ""
    if re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]{0,20}", scheme) and text.startswith(scheme + ":"):
        return f"'{scheme}:...'"
    return "(not shown: it may contain a password)"
