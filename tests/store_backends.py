"""The store backends every contract test runs against: the SQLite file and ephemeral memory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from governance.stores import (
    ApprovalStore,
    AuditLog,
    BudgetStore,
    MemoryApprovalStore,
    MemoryAuditLog,
    MemoryBudgetLedger,
)

T = TypeVar("T")

BACKENDS = ("sqlite", "memory")

# The memory backend's class for each SQLite store class it replaces.
_IN_MEMORY: dict[Any, Callable[..., Any]] = {
    ApprovalStore: MemoryApprovalStore,
    AuditLog: MemoryAuditLog,
    BudgetStore: MemoryBudgetLedger,
}


@dataclass(frozen=True)
class Backend:
    """Opens a store class on one backend: a fresh file under tmp_path, or its in-process
    memory counterpart (same keyword arguments)."""

    name: str
    root: Path
    opened: list[Any]

    @property
    def durable(self) -> bool:
        return self.name != "memory"

    def open(self, cls: Callable[..., T], file: str = "store.db", **kwargs: Any) -> T:
        if self.durable:
            store = cls(self.root / file, **kwargs)
        else:
            store = _IN_MEMORY[cls](**kwargs)
        self.opened.append(store)
        return store


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    made = Backend(str(request.param), tmp_path, [])
    yield made
    for store in made.opened:
        store.close()
