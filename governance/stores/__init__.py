"""Durable state behind small protocols: the hash-chained audit log, approvals, budgets,
their SQLite and in-memory backends and durability modes.
"""

from __future__ import annotations

from governance.stores._approvals import (
    APPROVAL_STATUSES,
    ApprovalConflict,
    ApprovalError,
    ApprovalNotFound,
    ApprovalRequest,
    ApprovalStatus,
    ApprovalStore,
    ApprovalStoreError,
    SelfApprovalError,
)
from governance.stores._approvals_memory import MemoryApprovalStore
from governance.stores._approvals_postgres import PostgresApprovalStore
from governance.stores._audit import AuditEvent, AuditLog
from governance.stores._audit_chain import KEY_ENV, ChainVerdict
from governance.stores._audit_memory import MemoryAuditLog
from governance.stores._audit_postgres import PostgresAuditLog
from governance.stores._backends import (
    ApprovalBackend,
    AuditBackend,
    BudgetBackend,
    StoreSpec,
    StoreUrlError,
    parse_store_url,
)
from governance.stores._budgets import (
    Budget,
    BudgetDenial,
    BudgetReservation,
    BudgetReset,
    BudgetResetRefused,
    BudgetScope,
    BudgetStatus,
    BudgetStore,
    BudgetStoreError,
)
from governance.stores._budgets_memory import MemoryBudgetLedger
from governance.stores._budgets_postgres import PostgresBudgetLedger
from governance.stores._checkpoint import (
    CheckpointBody,
    CheckpointOverwriteRefused,
    CheckpointReport,
    CheckpointSignatureError,
    RunFinding,
    read_checkpoint,
    verify_checkpoint,
    write_checkpoint,
)
from governance.stores._checkpoint_file import CheckpointError, CheckpointFileError
from governance.stores._checkpoint_keys import PRIVATE_KEY_ENV as CHECKPOINT_KEY_ENV
from governance.stores._checkpoint_keys import PUBLIC_KEY_ENV as CHECKPOINT_PUBLIC_KEY_ENV
from governance.stores._checkpoint_keys import (
    CheckpointKeyError,
)
from governance.stores._checkpoint_keys import generate_keypair as generate_checkpoint_keys
from governance.stores._checkpoint_keys import load_private_key as load_checkpoint_private_key
from governance.stores._checkpoint_keys import load_public_key as load_checkpoint_public_key
from governance.stores._checkpoint_schedule import (
    CheckpointingAuditLog,
    CheckpointSchedule,
)
from governance.stores._checkpoint_schedule import schedule_from_env as checkpoint_schedule_from_env
from governance.stores._postgres import PostgresTarget, PostgresUnavailable
from governance.stores._postgres_schema import (
    SchemaStatus,
    StoreSchemaError,
)
from governance.stores._postgres_schema import migrate as migrate_postgres
from governance.stores._postgres_schema import schema_status as postgres_schema_status
from governance.stores._postgres_stores import check_server as check_postgres_server
from governance.stores._sqlite import Durability

__all__ = [
    "APPROVAL_STATUSES",
    "ApprovalBackend",
    "ApprovalConflict",
    "ApprovalError",
    "ApprovalNotFound",
    "ApprovalRequest",
    "ApprovalStatus",
    "ApprovalStore",
    "ApprovalStoreError",
    "AuditBackend",
    "AuditEvent",
    "AuditLog",
    "Budget",
    "BudgetBackend",
    "BudgetDenial",
    "BudgetReservation",
    "BudgetReset",
    "BudgetResetRefused",
    "BudgetScope",
    "BudgetStatus",
    "BudgetStore",
    "BudgetStoreError",
    "CHECKPOINT_KEY_ENV",
    "CHECKPOINT_PUBLIC_KEY_ENV",
    "ChainVerdict",
    "check_postgres_server",
    "checkpoint_schedule_from_env",
    "CheckpointBody",
    "CheckpointError",
    "CheckpointFileError",
    "CheckpointKeyError",
    "CheckpointOverwriteRefused",
    "CheckpointReport",
    "CheckpointSchedule",
    "CheckpointSignatureError",
    "CheckpointingAuditLog",
    "Durability",
    "KEY_ENV",
    "MemoryApprovalStore",
    "MemoryAuditLog",
    "MemoryBudgetLedger",
    "PostgresApprovalStore",
    "PostgresAuditLog",
    "PostgresBudgetLedger",
    "PostgresTarget",
    "PostgresUnavailable",
    "RunFinding",
    "SchemaStatus",
    "SelfApprovalError",
    "StoreSchemaError",
    "StoreSpec",
    "StoreUrlError",
    "generate_checkpoint_keys",
    "load_checkpoint_private_key",
    "load_checkpoint_public_key",
    "migrate_postgres",
    "parse_store_url",
    "postgres_schema_status",
    "read_checkpoint",
    "verify_checkpoint",
    "write_checkpoint",
]
