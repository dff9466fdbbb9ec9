"""How the stores reach a shared PostgreSQL server: the URL, the driver, one connection.

`psycopg` 3 is imported only here and only when a Postgres store is opened (the `postgres`
extra): `proctor --help`, `check` and replay runs never pay for it. Every driver failure is
turned into the calling store's own error by the store; this module names the server without
its password (`_postgres_dsn`: the driver's own reading of the URL) and scrubs the password
and the DSN from every driver message, so no message, log line or trace can leak it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Final

from governance.core._errors import GovernanceError
from governance.stores._postgres_dsn import display_of, scrub

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
    what psycopg is given); `display` never does, and never raises."""

    dsn: str

    @property
    def display(self) -> str:
        return display_of(self.dsn)

    def scrub(self, text: str) -> str:
        """`text` (a driver's message) without the password or the DSN in any form."""
        return scrub(text, self.dsn)

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
        # `from None`: the driver's own exception (shown by a traceback) may echo the DSN.
        raise PostgresUnavailable(
            f"cannot reach the PostgreSQL store {target.display}: {first_line(exc, target)}"
        ) from None


def first_line(exc: BaseException, target: PostgresTarget) -> str:
    """The first line of a driver's message, without the target's password or DSN."""
    text = target.scrub(str(exc)).strip()
    return text.splitlines()[0] if text else type(exc).__name__
