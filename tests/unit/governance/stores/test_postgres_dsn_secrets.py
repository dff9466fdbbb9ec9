"""A PostgreSQL store URL's password never reaches a message, a repr or a traceback: not when
the URL parses, not when it does not, not when the driver echoes what it was given."""

from __future__ import annotations

import socket
import traceback
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from click.testing import CliRunner

from governance.stores import (
    PostgresTarget,
    StoreUrlError,
    migrate_postgres,
    parse_store_url,
    postgres_schema_status,
)
from governance.stores._approvals_postgres import PostgresApprovalStore
from governance.stores._audit_postgres import PostgresAuditLog
from governance.stores._budgets_postgres import PostgresBudgetLedger
from governance.stores._postgres import connect, first_line
from harness.cli._app import cli

SECRET = "s3cretPW"
# Passwords with every character that means something in a URL, unencoded.
RAW_PASSWORDS = [f"{c}{SECRET}" for c in "/#?%@:"] + [
    f"12/{SECRET}",
    f"ab/{SECRET}",
    f"{SECRET}%zz",
]
BAD_HOSTS = [
    f"postgresql://proctor:{SECRET}@[zz::1/proctor",
    f"postgresql://proctor:{SECRET}@db:99999/proctor",
    f"postgresql://proctor:{SECRET}@db:0/proctor",
]
KEYWORD_DSNS = [
    f"host=db user=proctor password={SECRET} dbname=proctor",
    f"password='{SECRET}' host=db",
]


def _urls() -> list[str]:
    raw = [f"postgresql://proctor:{p}@127.0.0.1:5432/proctor" for p in RAW_PASSWORDS]
    encoded = [
        f"postgresql://proctor:{quote(p, safe='')}@127.0.0.1:5432/proctor" for p in RAW_PASSWORDS
    ]
    return raw + encoded + BAD_HOSTS + KEYWORD_DSNS


def _no_secret(text: str) -> None:
    assert SECRET not in text
    assert SECRET[:4] not in text  # not even part of it


@pytest.mark.parametrize("url", _urls())
def test_parsing_a_store_url_never_shows_its_password(url: str) -> None:
    try:
        spec = parse_store_url(url)
    except StoreUrlError as exc:
        _no_secret(str(exc))
        _no_secret(repr(exc))
        assert exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__)
        return
    assert spec.postgres is not None
    for shown in (spec.display, spec.postgres.display, repr(spec.postgres), repr(spec)):
        _no_secret(shown)


@pytest.mark.parametrize("url", _urls())
def test_a_target_built_from_any_dsn_displays_without_its_password_and_never_raises(
    url: str,
) -> None:
    target = PostgresTarget(url)
    _no_secret(target.display)
    _no_secret(repr(target))


@pytest.mark.parametrize("password", RAW_PASSWORDS)
def test_a_password_with_an_unencoded_slash_or_at_is_refused_naming_the_fix(
    password: str,
) -> None:
    url = f"postgresql://proctor:{password}@127.0.0.1:5432/proctor"
    if "/" not in password and "@" not in password and "%" not in password:
        return  # `# ? :` are read by libpq as part of the password: nothing to refuse
    with pytest.raises(StoreUrlError, match="percent-encode"):
        parse_store_url(url)


def test_an_encoded_password_parses_and_is_shown_as_user_host_port_and_database() -> None:
    url = f"postgresql://proctor:{quote('a/b?c#d@e:f%g', safe='')}@db.internal:6432/gov"
    assert parse_store_url(url).display == "postgresql://proctor@db.internal:6432/gov"


@pytest.mark.parametrize("dsn", KEYWORD_DSNS)
def test_a_keyword_value_dsn_is_refused_without_repeating_it(dsn: str) -> None:
    with pytest.raises(StoreUrlError, match="keyword/value DSN") as caught:
        parse_store_url(dsn)
    _no_secret(str(caught.value))


@pytest.mark.parametrize("url", _urls())
def test_a_driver_message_echoing_the_dsn_or_password_is_scrubbed(url: str) -> None:
    target = PostgresTarget(url)
    for echoed in (
        f'invalid percent-encoded token: "{SECRET}%zz"',
        f'missing separator in URI query parameter: "{SECRET[2:]}@h/d"',
        f"could not connect with {url}",
        f"password {SECRET} rejected",
    ):
        _no_secret(first_line(RuntimeError(echoed), target))


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    "command",
    [["store", "migrate"], ["store", "status"], ["approvals", "list"], ["budgets", "status"]],
)
@pytest.mark.parametrize(
    "url",
    [
        "postgresql://proctor:{p}@127.0.0.1:{port}/proctor",
        "postgresql://proctor:12/{p}@127.0.0.1:{port}/proctor",
        "postgresql://proctor:ab/{p}@127.0.0.1:{port}/proctor",
        "postgresql://proctor:{p}%zz@127.0.0.1:{port}/proctor",
        "postgresql://proctor:{p}@127.0.0.1:99999/proctor",
        "host=127.0.0.1 port={port} user=proctor password={p} dbname=proctor",
    ],
)
def test_store_and_gateway_commands_never_print_the_password(
    command: list[str], url: str, tmp_path: Path
) -> None:
    store = url.format(p=SECRET, port=_closed_port())
    args = [*command, "--store", store]
    if command[0] != "store":
        args += ["--state-dir", str(tmp_path)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code in (64, 69), result.output
    _no_secret(result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize(
    "opener",
    [
        lambda target: connect(target),
        lambda target: PostgresBudgetLedger(target),
        lambda target: PostgresApprovalStore(target),
        lambda target: PostgresAuditLog(target),
        lambda target: postgres_schema_status(target),
        lambda target: migrate_postgres(target),
    ],
)
@pytest.mark.parametrize(
    "password",
    [quote("/?#" + SECRET, safe=""), f"{SECRET}%zz"],  # the second: libpq echoes it
)
def test_a_store_that_cannot_connect_fails_without_the_password_in_its_traceback(
    opener: Any, password: str
) -> None:
    url = f"postgresql://proctor:{password}@127.0.0.1:{_closed_port()}/p"
    with pytest.raises(Exception) as caught:  # a target built directly, not parsed first
        opener(PostgresTarget(url))
    shown = "".join(traceback.format_exception(caught.value))
    assert "PostgreSQL" in shown or "store" in shown
    _no_secret(shown)
    _no_secret(repr(caught.value))
