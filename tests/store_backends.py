"""The store backends every contract test runs against: the SQLite file, ephemeral memory and
PostgreSQL (a real server the tests start: tests/postgres_cluster.py; skipped locally without
one, required in CI)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
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

BACKENDS = ("sqlite", "memory", "postgres")

# The memory backend's class for each SQLite store class it replaces.
_IN_MEMORY: dict[Any, Callable[..., Any]] = {
    ApprovalStore: MemoryApprovalStore,
    AuditLog: MemoryAuditLog,
    BudgetStore: MemoryBudgetLedger,
}
# The PostgreSQL backend's class for each SQLite store class: constructed with a
# governance.stores._postgres.PostgresTarget first, then the same keyword arguments.
_ON_POSTGRES: dict[Any, str] = {
    ApprovalStore: "governance.stores._approvals_postgres:PostgresApprovalStore",
    AuditLog: "governance.stores._audit_postgres:PostgresAuditLog",
    BudgetStore: "governance.stores._budgets_postgres:PostgresBudgetLedger",
}


def postgres_class(cls: Any) -> Callable[..., Any]:
    module, name = _ON_POSTGRES[cls].split(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Backend:
    """Opens a store class on one backend: a fresh file under tmp_path, or its in-process
    memory counterpart (same keyword arguments)."""

    name: str
    root: Path
    opened: list[Any]
    # postgres: a database per file name (opening the same name again reopens the same data),
    # each a copy of the session's migrated template.
    new_database: Callable[[], str] | None = None
    databases: dict[str, str] = field(default_factory=dict)

    @property
    def durable(self) -> bool:
        return self.name != "memory"

    def open(self, cls: Callable[..., T], file: str = "store.db", **kwargs: Any) -> T:
        store: Any
        if self.name == "postgres":
            from governance.stores._postgres import PostgresTarget

            assert self.new_database is not None
            url = self.databases.get(file) or self.databases.setdefault(file, self.new_database())
            store = postgres_class(cls)(PostgresTarget(url), **kwargs)
        elif self.durable:
            store = cls(self.root / file, **kwargs)
        else:
            store = _IN_MEMORY[cls](**kwargs)
        self.opened.append(store)
        return store  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def migrated_template(postgres_cluster: Any) -> str:
    """A database at the code's schema version, copied for every test that needs one."""
    from governance.stores._postgres import PostgresTarget
    from governance.stores._postgres_schema import migrate

    url = postgres_cluster.create_database("template")
    migrate(PostgresTarget(url))
    return str(url.rsplit("/", 1)[1])


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    made = Backend(str(request.param), tmp_path, [])
    if made.name == "postgres":
        cluster = request.getfixturevalue("postgres_cluster")
        template = request.getfixturevalue("migrated_template")
        made = Backend(
            made.name, tmp_path, [], lambda: cluster.create_database(template=template)
        )
    yield made
    for store in made.opened:
        store.close()
