"""What the guardrail says about a store that failed: the client learns only that Proctor's
stores are unavailable (and a correlation id); the server log gets the detail, with the
store's password taken out wherever it appears (libpq quotes a URL's parts in its parse
errors, so scrubbing URLs alone is not enough)."""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote

# `scheme://user:password@` in any text: the password goes.
_URL_CREDENTIALS: Final = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)[^\s@]*@")
# `password=...` in a libpq keyword/value string or an error quoting one.
_KEYWORD_PASSWORD: Final = re.compile(r"(?i)(?P<head>password\s*=\s*)('[^']*'|\S+)")
HIDDEN: Final = "***"


def password_of(store_url: str) -> str | None:
    """The password part of a store URL as written (still percent-encoded), if any."""
    _, sep, rest = store_url.partition("://")
    if not sep:
        return None
    userinfo, at, _ = rest.rpartition("@")
    if not at:
        return None
    _, colon, password = userinfo.partition(":")
    return password if colon and password else None


def scrubbed(text: str, store_url: str) -> str:
    """`text` without the store's password (as written or decoded) or any URL's credentials."""
    text = _URL_CREDENTIALS.sub(lambda m: m.group("head") + HIDDEN + "@", text)
    text = _KEYWORD_PASSWORD.sub(lambda m: m.group("head") + HIDDEN, text)
    password = password_of(store_url)
    if password:
        for form in sorted({password, unquote(password)}, key=len, reverse=True):
            text = text.replace(form, HIDDEN)
    return text
