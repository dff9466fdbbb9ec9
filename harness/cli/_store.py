"""`proctor store migrate|status`: the schema of a shared PostgreSQL store.

SQLite and memory stores make their own tables when they open; a PostgreSQL database is
migrated once, deliberately, by whoever runs `proctor store migrate` (every gateway then
refuses a database at another version, naming this command). The password in a store URL is
never printed: the server is named by `postgresql://user@host:port/db`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from governance.core import GovernanceError
from harness import _exit_codes as codes
from harness.cli._options import STORE_ENV, STORE_HELP

if TYPE_CHECKING:
    from governance.stores import PostgresTarget

F = TypeVar("F", bound=Callable[..., Any])


def _store_url(func: F) -> F:
    return click.option(
        "--store", "url", envvar=STORE_ENV, default="sqlite", metavar="URL", help=STORE_HELP
    )(func)


@click.group("store")
def store_group() -> None:
    """The shared PostgreSQL store: apply its schema migrations, show its version."""


@store_group.command("migrate")
@_store_url
def migrate_command(url: str) -> int:
    """Take the store's schema to this Proctor's version, in one transaction (a second run
    applies nothing). Prints the version before and after.

    Exit 3 when the database is newer than this Proctor (upgrade Proctor; nothing changed),
    69 when the server cannot be reached or a migration fails (nothing changed).
    """
    from governance.stores import PostgresUnavailable, StoreSchemaError, migrate_postgres

    target = _postgres(url)
    if target is None:
        return codes.OK
    try:
        result = migrate_postgres(target)
    except StoreSchemaError as exc:
        return _fail(exc, codes.INVALID_SUITE)
    except PostgresUnavailable as exc:
        return _fail(exc, codes.UNAVAILABLE)
    done = f"{target.display}: schema version {result.before} -> {result.after}"
    if result.applied:
        click.echo(f"{done} (applied: {_names(result.applied)})")
    else:
        click.echo(f"{done}: already current, nothing applied")
    return codes.OK


@store_group.command("status")
@_store_url
def status_command(url: str) -> int:
    """The store's schema version and what `proctor store migrate` would apply (it writes
    nothing). Exit 3 when the database is newer than this Proctor, 69 when unreachable."""
    from governance.stores import PostgresUnavailable, postgres_schema_status

    target = _postgres(url)
    if target is None:
        return codes.OK
    try:
        found = postgres_schema_status(target)
    except PostgresUnavailable as exc:
        return _fail(exc, codes.UNAVAILABLE)
    click.echo(f"store: {target.display}")
    click.echo(f"schema version: {found.current} (this Proctor: {found.latest})")
    if found.newer:
        click.echo("newer than this Proctor knows: upgrade Proctor before opening it", err=True)
        return codes.INVALID_SUITE
    if found.pending:
        click.echo(f"`proctor store migrate` would apply: {_names(found.pending)}")
    else:
        click.echo("current: `proctor store migrate` would apply nothing")
    return codes.OK


def _names(migrations: Sequence[Any]) -> str:  # governance.stores._postgres_schema.Migration
    return ", ".join(f"{m.version} {m.description}" for m in migrations)


def _postgres(url: str) -> PostgresTarget | None:
    """The PostgreSQL target a URL names; None (after saying why) for SQLite and memory."""
    from governance.stores import StoreUrlError, parse_store_url

    try:
        spec = parse_store_url(url)
    except StoreUrlError as exc:
        raise click.BadParameter(str(exc), param_hint="'--store'") from None
    if spec.postgres is None:
        click.echo(
            f"{spec.display}: a {spec.kind} store makes its own schema when it opens; "
            "nothing to migrate (migrations are for postgresql:// stores)"
        )
    return spec.postgres


def _fail(exc: GovernanceError, code: int) -> int:
    click.echo(f"error: {exc}", err=True)
    return code
