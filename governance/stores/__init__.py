"""Durable state behind small protocols: the hash-chained audit log, approvals, budgets,
their SQLite and in-memory backends and durability modes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from governance.core._lazy import lazy_attributes
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
from governance.stores._audit import AuditEvent, AuditLog
from governance.stores._audit_chain import KEY_ENV, ChainVerdict
from governance.stores._audit_memory import MemoryAuditLog
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
from governance.stores._sqlite import Durability

if TYPE_CHECKING:
    from governance.stores._approvals_postgres import PostgresApprovalStore
    from governance.stores._audit_postgres import PostgresAuditLog
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
    from governance.stores._checkpoint_schedule import (
        schedule_from_env as checkpoint_schedule_from_env,
    )
    from governance.stores._postgres import PostgresTarget, PostgresUnavailable
    from governance.stores._postgres_schema import (
        SchemaStatus,
        StoreSchemaError,
    )
    from governance.stores._postgres_schema import migrate as migrate_postgres
    from governance.stores._postgres_schema import schema_status as postgres_schema_status
    from governance.stores._postgres_stores import check_server as check_postgres_server

# The PostgreSQL backend and audit checkpoints (the `cryptography` package) load on first use:
# a gateway on the memory or SQLite store without checkpoints (every scenario run) needs
# neither. A renamed export maps to (module, its name there).
_LAZY: dict[str, str | tuple[str, str]] = {
    "PostgresApprovalStore": "governance.stores._approvals_postgres",
    "PostgresAuditLog": "governance.stores._audit_postgres",
    "PostgresBudgetLedger": "governance.stores._budgets_postgres",
    "CheckpointBody": "governance.stores._checkpoint",
    "CheckpointOverwriteRefused": "governance.stores._checkpoint",
    "CheckpointReport": "governance.stores._checkpoint",
    "CheckpointSignatureError": "governance.stores._checkpoint",
    "RunFinding": "governance.stores._checkpoint",
    "read_checkpoint": "governance.stores._checkpoint",
    "verify_checkpoint": "governance.stores._checkpoint",
    "write_checkpoint": "governance.stores._checkpoint",
    "CheckpointError": "governance.stores._checkpoint_file",
    "CheckpointFileError": "governance.stores._checkpoint_file",
    "CHECKPOINT_KEY_ENV": ("governance.stores._checkpoint_keys", "PRIVATE_KEY_ENV"),
    "CHECKPOINT_PUBLIC_KEY_ENV": ("governance.stores._checkpoint_keys", "PUBLIC_KEY_ENV"),
    "CheckpointKeyError": "governance.stores._checkpoint_keys",
    "generate_checkpoint_keys": ("governance.stores._checkpoint_keys", "generate_keypair"),
    "load_checkpoint_private_key": ("governance.stores._checkpoint_keys", "load_private_key"),
    "load_checkpoint_public_key": ("governance.stores._checkpoint_keys", "load_public_key"),
    "CheckpointingAuditLog": "governance.stores._checkpoint_schedule",
    "CheckpointSchedule": "governance.stores._checkpoint_schedule",
    "checkpoint_schedule_from_env": ("governance.stores._checkpoint_schedule", "schedule_from_env"),
    "PostgresTarget": "governance.stores._postgres",
    "PostgresUnavailable": "governance.stores._postgres",
    "SchemaStatus": "governance.stores._postgres_schema",
    "StoreSchemaError": "governance.stores._postgres_schema",
    "migrate_postgres": ("governance.stores._postgres_schema", "migrate"),
    "postgres_schema_status": ("governance.stores._postgres_schema", "schema_status"),
    "check_postgres_server": ("governance.stores._postgres_stores", "check_server"),
}


__getattr__ = lazy_attributes(globals(), _LAZY)


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
