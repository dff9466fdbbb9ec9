"""Reading a PostgreSQL DSN as the driver reads it, and keeping its password out of every text.

The URL is parsed by libpq itself (`psycopg.conninfo.conninfo_to_dict`) when psycopg is
installed: Proctor and the driver then agree on which part is the password. (Python's
`urlsplit` does not: an unencoded `/` in a password makes it read part of the password as the
host or the path.) A URL libpq reads in a way that is surely a mistake (an `@` in the host or
database name: a password with an unencoded `/`, `?` or `@`; a port that is not a number
1-65535) is refused when the store URL is parsed, naming the fix and never the URL.

`scrub` removes from a message (a driver's error, which may echo what it was given) the whole
DSN, the password as written and percent-decoded, every candidate password (the text between
`://` and any `@`), and every quoted token sharing four characters with one of them.
"""

from __future__ import annotations

import importlib
import re
from typing import Final
from urllib.parse import unquote, urlsplit

UNPARSEABLE: Final = "<unparseable PostgreSQL URL>"
_HIDDEN: Final = "***"
_SHARED: Final = 4  # a quoted token sharing this many characters with a secret is hidden
_MAX_PART: Final = 128  # longer passwords: parts of up to this many characters are hidden
_QUOTED: Final = re.compile(r'"[^"]*"|\'[^\']*\'')
_PASSWORD_KEY: Final = re.compile(r"password\s*=\s*('(?:[^'\\]|\\.)*'|[^&\s]*)", re.IGNORECASE)
_ENCODE_HINT: Final = (
    "percent-encode the password's special characters (/ as %2F, ? as %3F, # as %23, "
    "@ as %40, % as %25, : as %3A)"
)


class DsnError(ValueError):
    """The DSN does not parse, or parses into something surely unintended. The message never
    contains the DSN or any part of its password."""


def parse_dsn(dsn: str) -> dict[str, str]:
    """The DSN's parameters as libpq reads them (without psycopg: a strict reading of the URL
    form). Raises DsnError naming the fix."""
    params = _read(dsn)
    for key in ("host", "dbname", "port"):
        if "@" in params.get(key, ""):
            raise DsnError(f"the PostgreSQL URL does not parse as intended: {_ENCODE_HINT}")
    for port in params.get("port", "").split(","):
        if port and not (port.isdigit() and 1 <= int(port) <= 65535):
            raise DsnError(
                "the PostgreSQL URL's port is not a number from 1 to 65535 "
                f"(if the password contains a colon or slash: {_ENCODE_HINT})"
            )
    return params


def _read(dsn: str) -> dict[str, str]:
    try:
        conninfo = importlib.import_module("psycopg.conninfo")
    except ImportError:
        return _read_url(dsn)
    try:
        found = conninfo.conninfo_to_dict(dsn)
    except Exception as exc:
        # libpq quotes the offending input (a password, or part of one): drop every quote.
        why = _QUOTED.sub("(...)", str(exc).strip().splitlines()[0] if str(exc).strip() else "")
        raise DsnError(
            f"the PostgreSQL URL does not parse: {scrub(why, dsn)}; {_ENCODE_HINT}"
        ) from None
    return {str(k): str(v) for k, v in found.items() if v is not None}


def _read_url(dsn: str) -> dict[str, str]:
    """Without the driver (the store will not open anyway): the URL form, strictly."""
    try:
        parts = urlsplit(dsn)
        port = parts.port
    except ValueError:
        raise DsnError(f"the PostgreSQL URL does not parse: {_ENCODE_HINT}") from None
    if parts.fragment or parts.scheme not in ("postgresql", "postgres"):
        raise DsnError(f"the PostgreSQL URL does not parse: {_ENCODE_HINT}")
    found = {
        "user": unquote(parts.username or ""),
        "password": unquote(parts.password or ""),
        "host": unquote(parts.hostname or ""),
        "port": "" if port is None else str(port),
        "dbname": unquote(parts.path.lstrip("/")),
    }
    return {k: v for k, v in found.items() if v}


def display_of(dsn: str) -> str:
    """`postgresql://user@host:port/dbname` as the driver reads the DSN; never the password
    (UNPARSEABLE when in doubt); never raises."""
    try:
        params = parse_dsn(dsn)
        user = params.get("user", "")
        port = params.get("port", "")
        shown = (
            f"postgresql://{user + '@' if user else ''}{params.get('host', '') or 'localhost'}"
            f"{':' + port if port else ''}/{params.get('dbname', '')}"
        )
        if any(secret in shown for secret in secrets_of(dsn)):
            return UNPARSEABLE
        return shown
    except Exception:
        return UNPARSEABLE


def secrets_of(dsn: str) -> set[str]:
    """Every string that is, or might be, the DSN's password."""
    found = set()
    rest = dsn.split("://", 1)[1] if "://" in dsn else ""
    for at in (i for i, char in enumerate(rest) if char == "@"):
        userinfo = rest[:at]
        if ":" in userinfo:
            found.add(userinfo.split(":", 1)[1])
    found.update(match.group(1).strip("'") for match in _PASSWORD_KEY.finditer(dsn))
    try:
        password = _read(dsn).get("password")
    except Exception:
        password = None
    if password:
        found.add(password)
    found |= {unquote(secret) for secret in found}
    return {secret for secret in found if secret}


def _whole(dsn: str) -> set[str]:
    return {text for text in (dsn, dsn.strip()) if text}


def scrub(text: str, dsn: str) -> str:
    """`text` without any of the DSN's secrets (longest first), nor a quoted token that shares
    `_SHARED` characters with one."""
    secrets = sorted(secrets_of(dsn), key=len, reverse=True)
    for secret in sorted(_whole(dsn), key=len, reverse=True) + secrets:
        if len(secret) >= 3:
            text = text.replace(secret, _HIDDEN)
    for secret in secrets:  # a driver may echo part of a password (the rest of a token)
        for size in range(min(len(secret), _MAX_PART) - 1, _SHARED - 1, -1):
            for start in range(len(secret) - size + 1):
                text = text.replace(secret[start : start + size], _HIDDEN)

    def hide(match: re.Match[str]) -> str:
        token = match.group(0)[1:-1]
        for secret in secrets:
            if secret in token or _shares(token, secret):
                return _HIDDEN
        return match.group(0)

    return _QUOTED.sub(hide, text)


def _shares(token: str, secret: str) -> bool:
    size = min(_SHARED, len(secret))
    return any(secret[i : i + size] in token for i in range(len(secret) - size + 1))
