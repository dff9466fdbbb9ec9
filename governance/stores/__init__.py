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
    "ChainVerdict",
    "Durability",
    "KEY_ENV",
    "MemoryApprovalStore",
    "MemoryAuditLog",
    "MemoryBudgetLedger",
    "SelfApprovalError",
    "StoreSpec",
    "StoreUrlError",
    "parse_store_url",
]
