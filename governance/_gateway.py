"""A governed tool gateway on disk: one state directory, one policy, one firewall.

Layout of the state directory (default `.proctor/`):
    audit.sqlite       the hash-chained audit log
    approvals.sqlite   held calls and their reviews (mode 0600; raw arguments sealed with
                       PROCTOR_APPROVALS_KEY, else a key derived from PROCTOR_AUDIT_KEY)
    budgets.sqlite     the destructive-action ledger and its reset watermarks
    workspace/         the built-in tools' sandbox and business database

`store` picks where approvals, budgets and the audit log live (governance.stores): `sqlite`
(the files above, default), `sqlite:///<dir>[?durability=os]` (the files in another directory),
`memory:` (ephemeral: nothing on disk, no fsync; for scenario runs) or
`postgresql://user@host:port/db` (one database shared by every gateway pointed at it, migrated
by `proctor store migrate`). `durability` is the file stores' mode: `fsync` (default) or `os`
(survives a killed process, not a power loss).
`checkpoint` (governance.stores: `CheckpointSchedule`) has the gateway sign checkpoints of its
audit log every N events and on close, into a file outside the database.
`telemetry` (governance.telemetry: `Telemetry`) exports the firewall's events over OpenTelemetry
and reads the pending approvals and budget usage from these stores for its metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from governance._firewall import DEFAULT_MAX_RESULT_CHARS, Firewall, PolicySource, StaticPolicy
from governance.core._clock import Clock, SystemClock
from governance.core._closing import Closing
from governance.core._contracts import ToolSource
from governance.core._errors import GovernanceError
from governance.core._process_token import current_process_token
from governance.policy._compile import Policy
from governance.policy._load import PolicyFile
from governance.stores._approval_recovery import InDoubt, reconcile_with_audit
from governance.stores._approvals import RESTARTED_REASON, ApprovalStore
from governance.stores._approvals_memory import MemoryApprovalStore
from governance.stores._audit import AuditLog
from governance.stores._audit_memory import MemoryAuditLog
from governance.stores._backends import (
    ApprovalBackend,
    AuditBackend,
    BudgetBackend,
    StoreSpec,
    parse_store_url,
)
from governance.stores._budgets import BudgetStore
from governance.stores._budgets_memory import MemoryBudgetLedger
from governance.stores._sealing import key_from_env as approvals_key_from_env
from governance.stores._sqlite import Durability
from governance.tools import builtin_tools
from governance.tools._registry import ToolRegistry

if TYPE_CHECKING:
    from governance.mcp._client import McpToolSource, SourceStatus
    from governance.mcp._config import McpConfig, McpServerSpec
    from governance.mcp._mapping import McpToolDefinition
    from governance.mcp._pins import PinSet
    from governance.stores._checkpoint_schedule import CheckpointingAuditLog, CheckpointSchedule
    from governance.telemetry._telemetry import Telemetry

DEFAULT_STATE_DIR = Path(".proctor")
# Who resumes a held call: `detached` (default) - whoever holds the run, even after a restart;
# `awaited` - a caller blocking in this process for the decision (`proctor ask --wait`).
HeldCalls = Literal["detached", "awaited"]


class Gateway(Closing):
    """Opens every store, reconciles approvals left by dead processes, then builds the firewall.

    With `mcp_config`, the MCP servers it names are started and their tools registered beside
    the local ones (pins from `<config stem>.lock.json`); a server that fails to start is
    skipped and reported in `mcp_sources[i].status`. `close()` stops them.

    `held_calls`: `detached` (default) parks a held call so that it survives restarts: a
    reviewer can still decide it and the run resumes later. `awaited` registers this process as
    the call's waiter: if the process dies before the decision, the next gateway on the same
    stores expires the request at start-up ("process restarted") and audits `approval.expired`.
    """

    def __init__(
        self,
        *,
        state_dir: Path,
        policy_path: Path,
        clock: Clock | None = None,
        sources: Sequence[ToolSource] = (),
        builtin: bool = True,
        approval_ttl_seconds: float = 300.0,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
        audit_key_from_env: bool = True,
        mcp_config: Path | None = None,
        policy: Policy | None = None,
        store: str | StoreSpec = "sqlite",
        durability: Durability | None = None,
        evidence: bool = False,
        registry: ToolRegistry | None = None,
        checkpoint: CheckpointSchedule | None = None,
        held_calls: HeldCalls = "detached",
        telemetry: Telemetry | None = None,
    ) -> None:
        """`registry`, when given, is the whole tool surface, already built (a suite's scenarios
        share one, with its digest): then no `sources`, `builtin` or `mcp_config`."""
        if registry is not None and (sources or builtin or mcp_config is not None):
            raise ValueError("a gateway given a registry takes no other tool source")
        if held_calls not in ("detached", "awaited"):
            raise ValueError(f"held_calls must be 'detached' or 'awaited', not {held_calls!r}")
        self.state_dir = state_dir
        self.clock = clock or SystemClock()
        # A bad store URL or durability refuses to start, before anything is created.
        self.store = (
            store
            if isinstance(store, StoreSpec) and durability is None
            else parse_store_url(
                store.url if isinstance(store, StoreSpec) else store, durability=durability
            )
        )
        state_dir.mkdir(parents=True, exist_ok=True)
        # A malformed policy refuses to start here. A given `policy` is fixed (mutation testing
        # runs the suite against in-memory mutants); `policy_path` then only names it.
        self.policy: PolicySource = (
            StaticPolicy(policy) if policy is not None else PolicyFile(policy_path)
        )
        # A malformed MCP config or pin file refuses to start too; a server that fails is skipped.
        mcp: McpConfig | None = None
        mcp_pins: PinSet | None = None
        if mcp_config is not None:
            # Imported here: a gateway without MCP servers (every scenario run but an MCP
            # one) need not build the config's models.
            from governance.mcp._config import load_mcp_config
            from governance.mcp._pins import load_pins

            mcp = load_mcp_config(mcp_config)
            mcp_pins = load_pins(mcp.lock_path)
        self._mcp_sources: list[McpToolSource] = []
        self.audit: AuditBackend
        self.approvals: ApprovalBackend
        self.budgets: BudgetBackend
        self._open_stores(approval_ttl_seconds, audit_key_from_env)
        # The firewall writes through this wrapper, so every event counts towards the schedule.
        self.checkpoints: CheckpointingAuditLog | None = None
        if checkpoint is not None:
            # Imported here: checkpoints sign with the `cryptography` package, which a gateway
            # without them (every scenario run but a checkpoint one) need not load.
            from governance.stores._checkpoint_schedule import CheckpointingAuditLog

            self.checkpoints = CheckpointingAuditLog(self.audit, checkpoint, self.clock)
            self.audit = self.checkpoints
        # Before any traffic: requests whose waiting process died are failed closed, and rows a
        # crash left disagreeing with the audit chain are settled and reported. Memory stores
        # were created empty just now, for this gateway alone: nobody left anything in them.
        self.reconciled: list[str] = []
        self.in_doubt: list[InDoubt] = []
        if self.store.kind != "memory":
            self.reconciled = self.approvals.reconcile()
            self._audit_expired(self.reconciled)
            self.in_doubt = reconcile_with_audit(self.approvals, self.audit)
        all_sources: list[ToolSource] = [builtin_tools(self.workspace)] if builtin else []
        all_sources.extend(sources)
        if mcp is not None:
            # Imported here: the MCP SDK costs half a second, and most gateways never need it.
            from governance.mcp._client import open_mcp_sources

            self._mcp_sources = open_mcp_sources(mcp, mcp_pins)
            all_sources.extend(self._mcp_sources)
        try:
            self.registry = registry if registry is not None else ToolRegistry(all_sources)
        except BaseException:
            self.close()
            raise
        self.firewall = Firewall(
            self.registry,
            self.policy,
            self.audit,
            approvals=self.approvals,
            budgets=self.budgets,
            max_result_chars=max_result_chars,
            evidence=evidence,
            waiter=current_process_token() if held_calls == "awaited" else None,
        )
        self._unwatch: Callable[[], None] | None = None
        if telemetry is not None:
            self._watch(telemetry)

    def _watch(self, telemetry: Telemetry) -> None:
        """Export the firewall's events; lend the stores to the pending-approvals and
        budget-usage gauges until close (read on the exporter's thread; the stores are
        thread-safe)."""
        self.firewall.add_observer(telemetry.observe)
        approvals, budgets, policy = self.approvals, self.budgets, self.policy
        self._unwatch = telemetry.watch(
            pending=lambda: len(approvals.list(status="pending")),
            budgets=lambda: [
                (row.budget_id, row.scope, row.used)
                for row in budgets.status(policy.current().budgets)
            ],
        )

    def _audit_expired(self, approval_ids: Sequence[str]) -> None:
        """Put each request reconciliation expired on its run's chain: its waiter died, so
        nobody can resume it, and nothing of it was executed (pending, or approved but never
        consumed: `approved_by` names the reviewer whose approval lapsed with the waiter)."""
        for approval_id in approval_ids:
            try:
                request = self.approvals.get(approval_id)
                self.audit.append(
                    request.run_id,
                    "approval.expired",
                    {
                        "call_id": request.call_id,
                        "tool": request.tool,
                        "approval_id": approval_id,
                        "reason": request.status_reason or RESTARTED_REASON,
                        "waiter": request.waiter,
                        **({"approved_by": request.decided_by} if request.decided_by else {}),
                    },
                )
            except GovernanceError:
                # Expired either way (the safe direction); the store row keeps the reason.
                continue

    def _open_stores(self, ttl: float, key_from_env: bool) -> None:
        """The three stores on the chosen backend; a half-opened set is closed again."""
        spec, clock = self.store, self.clock
        audit_key = AuditLog.key_from_env() if key_from_env else None
        approvals_key = approvals_key_from_env() if key_from_env else None
        opened: list[AuditBackend | ApprovalBackend | BudgetBackend] = []
        try:
            if spec.kind == "memory":
                self.audit = MemoryAuditLog(key=audit_key, clock=clock)
                opened.append(self.audit)
                self.approvals = MemoryApprovalStore(
                    clock=clock, default_ttl_seconds=ttl, key=approvals_key
                )
                opened.append(self.approvals)
                self.budgets = MemoryBudgetLedger(clock=clock)
                return
            if spec.postgres is not None:  # every replica pointed at one database shares all
                from governance.stores._postgres_stores import open_postgres_stores

                shared = open_postgres_stores(
                    spec.postgres,
                    clock=clock,
                    default_ttl_seconds=ttl,
                    audit_key=audit_key,
                    approvals_key=approvals_key,
                )
                self.audit, self.approvals, self.budgets = (
                    shared.audit, shared.approvals, shared.budgets,
                )  # fmt: skip
                return
            where = spec.directory or self.state_dir
            where.mkdir(parents=True, exist_ok=True)
            mode = spec.durability
            self.audit = AuditLog(
                where / "audit.sqlite", key=audit_key, clock=clock, durability=mode
            )
            opened.append(self.audit)
            self.approvals = ApprovalStore(
                where / "approvals.sqlite",
                clock=clock,
                default_ttl_seconds=ttl,
                key=approvals_key,
                durability=mode,
            )
            opened.append(self.approvals)
            self.budgets = BudgetStore(where / "budgets.sqlite", clock=clock, durability=mode)
        except BaseException:
            for store in opened:
                store.close()
            raise

    @property
    def workspace(self) -> Path:
        return self.state_dir / "workspace"

    @property
    def mcp_sources(self) -> tuple[McpSourceView, ...]:
        """What each MCP server is doing: status, pid, listed tools. Never the source itself
        (an executable source outside the firewall would be a way around it)."""
        return tuple(McpSourceView(source) for source in self._mcp_sources)

    def close(self) -> None:
        unwatch, self._unwatch = getattr(self, "_unwatch", None), None
        if unwatch is not None:  # its stores are closed next: the gauges stop reading them
            unwatch()
        for source in self._mcp_sources:
            source.close()
        self.budgets.close()
        self.approvals.close()
        self.audit.close()


class McpSourceView:
    """A read-only look at one MCP source: it has no way to call a tool."""

    __slots__ = ("__source",)

    def __init__(self, source: McpToolSource) -> None:
        self.__source = source

    @property
    def spec(self) -> McpServerSpec:
        return self.__source.spec

    @property
    def status(self) -> SourceStatus:
        return self.__source.status

    @property
    def pid(self) -> int | None:
        return self.__source.pid

    def definitions(self) -> list[McpToolDefinition]:
        return self.__source.definitions()
