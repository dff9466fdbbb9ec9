"""How the stores reach a shared PostgreSQL server: the URL, the driver, one connection.

`psycopg` 3 is imported only here and only when a Postgres store is opened (the `postgres`
extra): `proctor --help`, `check` and replay runs never pay for it. Every driver failure is
turned into the calling store's own error by the store; this module only names the server
without its password, so no message, log line or trace can leak it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Final
from urllib.parse import urlsplit

from governance.core._errors import GovernanceError

SCHEMES: Final = ("postgresql", "postgres")
INSTALL_HINT: Final = "pip install 'proctor[postgres]' (psycopg 3)"
# A server that does not answer within this many seconds is down: the call fails closed
# instead of hanging the agent.
CONNECT_TIMEOUT_SECONDS: Final = 5


class PostgresUnavailable(GovernanceError):
    """The driver is missing or the server cannot be reached; nothing was recorded."""


@dataclass(frozen=True, slots=True)
class PostgresTarget:
    """A server and database, from a `postgresql://` URL. `dsn` keeps the password (it is
    what psycopg is given); `display` never does."""

    dsn: str

    @property
    def display(self) -> str:
        parts = urlsplit(self.dsn)
        host = parts.hostname or "localhost"
        port = f":{parts.port}" if parts.port else ""
        user = f"{parts.username}@" if parts.username else ""
        return f"{parts.scheme}://{user}{host}{port}{parts.path}"

    def __repr__(self) -> str:  # a dataclass repr would print the password
        return f"PostgresTarget({self.display!r})"


def psycopg() -> ModuleType:
    """The driver, imported on first use; a clear error naming the extra when it is absent."""
    try:
        return importlib.import_module("psycopg")
    except ImportError as exc:
        raise PostgresUnavailable(
            f"the PostgreSQL store needs the psycopg driver: {INSTALL_HINT}"
        ) from exc


def connect(target: PostgresTarget, *, autocommit: bool = True) -> Any:
    """One connection (autocommit: the stores open their transactions themselves)."""
    driver = psycopg()
    try:
        return driver.connect(
            target.dsn, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT_SECONDS
        )
    except driver.Error as exc:
        raise PostgresUnavailable(
            f"cannot reach the PostgreSQL store {target.display}: {first_line(exc)}"
        ) from exc


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
