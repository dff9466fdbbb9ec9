"""Which audit log an `audit` command reads: the SQLite file DB, or the store `--store URL`
names (env PROCTOR_STORE_URL): `postgresql://...` (the shared server), `sqlite:///<dir>` or
`sqlite` (`<dir>/audit.sqlite`, the state directory's by default).

A DB on the command line wins over PROCTOR_STORE_URL in the environment (the file was named on
purpose); DB and `--store` together are a usage error. A PostgreSQL server that cannot be
reached, or that dies mid-read, fails as PostgresUnavailable (exit 69), a database at another
schema version as StoreSchemaError (exit 3): never a verdict. The password in a URL is never
printed: the server is named without it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from governance.core import GovernanceError
from harness.cli._options import STORE_ENV

if TYPE_CHECKING:
    from governance.stores import AuditBackend, PostgresTarget

F = TypeVar("F", bound=Callable[..., Any])

AUDIT_DB = click.Path(exists=True, dir_okay=False, path_type=Path)
STORE_HELP = (
    "Read the audit log of this store instead of a file DB: postgresql://user@host:port/db "
    "(the shared server), sqlite:///<dir> (<dir>/audit.sqlite) or sqlite (the state "
    "directory's: $PROCTOR_STATE_DIR, else .proctor) [env PROCTOR_STORE_URL]."
)


def audit_store_option(func: F) -> F:
    return click.option(
        "--store", "store_url", envvar=STORE_ENV, default=None, metavar="URL", help=STORE_HELP
    )(func)


@dataclass(frozen=True, slots=True)
class AuditSource:
    """A SQLite file (`path`) or a PostgreSQL database (`target`); `name` is what is printed."""

    name: str
    path: Path | None = None
    target: PostgresTarget | None = None


def audit_source(db: Path | None, store_url: str | None) -> AuditSource:
    """The log the command was pointed at (a click usage error when it names none)."""
    ctx = click.get_current_context()
    from_command_line = ctx.get_parameter_source("store_url") == ParameterSource.COMMANDLINE
    if db is not None:
        if store_url is not None and from_command_line:
            raise click.UsageError("give the audit log as DB or as --store URL, not both")
        return AuditSource(str(db), path=db)
    if store_url is None:
        raise click.UsageError(
            "name the audit log: a file (e.g. .proctor/audit.sqlite) or --store URL "
            f"(postgresql://user@host:port/db; env {STORE_ENV})"
        )
    from governance.stores import StoreUrlError, parse_store_url

    try:
        spec = parse_store_url(store_url)
    except StoreUrlError as exc:
        raise click.BadParameter(str(exc), param_hint="'--store'") from None
    if spec.postgres is not None:
        return AuditSource(spec.postgres.display, target=spec.postgres)
    if spec.kind == "memory":
        raise click.BadParameter(
            "a memory store lives and dies with its gateway's process: there is no log to read",
            param_hint="'--store'",
        )
    directory = spec.directory or Path(os.environ.get("PROCTOR_STATE_DIR") or ".proctor")
    path = directory / "audit.sqlite"
    if not path.is_file():
        raise click.BadParameter(f"no audit log at {path}", param_hint="'--store'")
    return AuditSource(str(path), path=path)


@contextlib.contextmanager
def opened_log(source: AuditSource, *, writable: bool = False) -> Iterator[AuditBackend]:
    """The log (a file read-only unless `writable`: a checkpoint records the log's identity
    once); a PostgreSQL read failure is PostgresUnavailable."""
    from governance.stores import AuditLog

    if source.target is None:
        assert source.path is not None
        try:
            log: Any = AuditLog.from_env(source.path, readonly=not writable)
        except GovernanceError as exc:
            raise click.BadParameter(
                f"{exc} (is it a Proctor audit log?)", param_hint="'DB'"
            ) from None
        with log:
            yield log
        return
    from governance.stores import PostgresAuditLog, PostgresUnavailable, check_postgres_server

    check_postgres_server(source.target)  # unreachable: 69; another schema version: 3
    try:
        log = PostgresAuditLog(source.target, key=AuditLog.key_from_env())
    except GovernanceError as exc:  # the server went away since the check
        raise PostgresUnavailable(str(exc)) from exc
    with log:
        try:
            yield log
        except PostgresUnavailable:
            raise
        except GovernanceError as exc:
            if not _server_failure(exc):  # a tampered row: the chain's problem, not the server's
                raise
            raise PostgresUnavailable(str(exc)) from exc


def _server_failure(exc: BaseException) -> bool:
    """A store error caused by the driver, the network or an unreachable server."""
    from governance.stores import PostgresUnavailable

    cause = exc.__cause__
    return isinstance(cause, (PostgresUnavailable, OSError)) or (
        cause is not None and type(cause).__module__.split(".")[0] == "psycopg"
    )
