"""The console's signed session cookie: who the operator is, and their CSRF value.

The cookie is `base64url(json).base64url(hmac-sha256)`, keyed from the access token, so a
console restarted with the same token keeps its operators signed in and a cookie made for
another token is worthless. It is HttpOnly and SameSite=Strict; the CSRF value inside it is
what every state-changing request must echo back (form field `csrf` or `X-CSRF-Token`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass

COOKIE = "proctor_console"
MAX_AGE_SECONDS = 12 * 3600
_OPERATOR = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")


class OperatorNameError(ValueError):
    """An operator name the console will not record as a reviewer."""


# Names the console and the CLI record for their own actions (withdrawals, expiry sweeps).
RESERVED_OPERATORS = frozenset({"console", "proctor", "system"})


def check_operator(name: str) -> str:
    """The name, stripped; or OperatorNameError saying what a name may contain."""
    name = name.strip()
    if not _OPERATOR.fullmatch(name):
        raise OperatorNameError(
            "an operator name is 1-64 letters, digits, '.', '_', '@' or '-', starting with a "
            "letter or digit"
        )
    if name.lower() in RESERVED_OPERATORS:
        raise OperatorNameError(f"{name!r} is the name Proctor records its own actions under")
    return name


@dataclass(frozen=True, slots=True)
class Session:
    operator: str
    csrf: str
    issued_at: int  # unix seconds


class SessionCodec:
    def __init__(self, token: str) -> None:
        self._key = hmac.new(token.encode(), b"proctor-console-session-v1", hashlib.sha256).digest()

    def issue(self, operator: str, now: int) -> tuple[Session, str]:
        session = Session(check_operator(operator), secrets.token_urlsafe(24), now)
        body = json.dumps(
            {"o": session.operator, "c": session.csrf, "t": session.issued_at},
            separators=(",", ":"),
        ).encode()
        return session, f"{_b64(body)}.{_b64(self._sign(body))}"

    def read(self, cookie: str | None, now: int) -> Session | None:
        """The session a cookie carries, or None when absent, forged, malformed or expired."""
        if not cookie or cookie.count(".") != 1:
            return None
        body_text, mac_text = cookie.split(".")
        try:
            body, mac = _unb64(body_text), _unb64(mac_text)
        except ValueError:
            return None
        if not hmac.compare_digest(mac, self._sign(body)):
            return None
        try:
            data = json.loads(body)
            session = Session(check_operator(data["o"]), str(data["c"]), int(data["t"]))
        except (ValueError, KeyError, TypeError):
            return None
        if not 0 <= now - session.issued_at <= MAX_AGE_SECONDS:
            return None
        return session

    def _sign(self, body: bytes) -> bytes:
        return hmac.new(self._key, body, hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as exc:
        raise ValueError("not base64url") from exc
