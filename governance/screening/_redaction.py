"""Mask secrets in JSON-like data before it is stored or shown: by key name and by shape.

Pure: no I/O. Four nets, in order: vendor shapes and PEM blocks (`_secret_shapes`), credentials
in URLs (a password or token before `@`, a credential-named query parameter) and
`Bearer`/`Basic` headers, values under a secret-looking name (`KEY=...`, `token:`,
`"api_key": ...`, `the API key is ...`), and any long random-looking base64 run. A secret with no
known shape, no telling name and a low-entropy body (a short word password in prose) still
passes through, which is why the audit log also keeps a keyed digest of the raw arguments.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from governance.screening._secret_shapes import (
    ANY_KEYWORD,
    BASIC,
    BEARER,
    KEYWORDS,
    RANDOM_RUN,
    RANDOM_RUN_MIN_CHARS,
    SHAPE_MIN_CHARS,
    SHAPES,
    UNKEYED_SHAPE_MIN_CHARS,
    after_boundary,
    is_basic_credential,
    is_prose,
    is_wordlike,
    looks_random,
    public_blocks,
    split_path_prefix,
)

REDACTED: Final = "[REDACTED]"

# A key is sensitive when one of these part sequences occurs in its normalised parts
# (`GitHub-Token` -> github, token), so `db_password` and `auth_token` match while
# `tokens_used`, `max_tokens` and `author` do not: parts are compared whole.
_SENSITIVE_TERMS: Final[tuple[tuple[str, ...], ...]] = (
    ("password",),
    ("passwd",),
    ("pwd",),
    ("passphrase",),
    ("secret",),
    ("secrets",),
    ("token",),
    ("apikey",),
    ("api", "key"),
    ("access", "key"),
    ("account", "key"),
    ("app", "key"),
    ("application", "key"),
    ("private", "key"),
    ("signing", "key"),
    ("encryption", "key"),
    ("ssh", "key"),
    ("master", "key"),
    ("authorization",),
    ("auth",),
    ("cookie",),
    ("cookies",),
    ("session",),
    ("sessionid",),
    ("credential",),
    ("credentials",),
    ("bearer",),
    ("amz", "signature"),  # S3 presigned `X-Amz-Signature=`
    ("goog", "signature"),  # GCS signed URL `X-Goog-Signature=`
)
# A key with one of these parts names a fact *about* a secret, not the secret itself
# (`token_count`, `token_type`, `secret_name`, `auth_url`).
_METADATA_PARTS: Final = frozenset(
    {
        "count", "counts", "used", "usage", "limit", "limits", "max", "min", "total", "num",
        "length", "len", "size", "type", "types", "kind", "ttl", "expiry", "expires", "expire",
        "expiration", "url", "uri", "endpoint", "enabled", "required", "method", "methods",
        "scheme", "name", "names", "path", "file", "header",
    }
)  # fmt: skip
# Extra env-var style names (`STRIPE_KEY=...`, `DB_PASS=...`): only when written in UPPER case,
# so a query string such as `sort_key=created_at` survives.
_ENV_SUFFIXES: Final = frozenset({"key", "pass", "pat", "pw"})

_CAMEL_1 = re.compile(r"([a-z0-9])([A-Z])")
_CAMEL_2 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def _key_parts(key: str) -> tuple[str, ...]:
    spaced = _CAMEL_2.sub(r"\1_\2", _CAMEL_1.sub(r"\1_\2", key))
    return tuple(part for part in _NON_ALNUM.split(spaced.lower()) if part)


# Verdicts are pure functions of the text, and the same few names and identifiers recur in
# every event of every call: remember them. Only exact `str` values are remembered (a subclass
# could compare equal to a remembered text it is not), and a full memo starts over.
_MEMO_SIZE: Final = 4096
_KEY_VERDICTS: dict[str, bool] = {}
_NAME_VERDICTS: dict[str, bool] = {}


def _memo(memo: dict[str, bool], key: str, verdict: Callable[[str], bool]) -> bool:
    if type(key) is not str:
        return verdict(key)
    found = memo.get(key)
    if found is None:
        found = verdict(key)
        if len(memo) >= _MEMO_SIZE:
            memo.clear()
        memo[key] = found
    return found


def is_sensitive_key(key: str) -> bool:
    """True when a mapping key (or an env var / header name) names a secret."""
    return _memo(_KEY_VERDICTS, key, _is_sensitive_key)


# The terms by length, so each run of a key's parts is looked up in a set, not compared to each.
_TERMS_BY_SIZE: Final = tuple(
    (size, frozenset(term for term in _SENSITIVE_TERMS if len(term) == size))
    for size in sorted({len(term) for term in _SENSITIVE_TERMS})
)


def _is_sensitive_key(key: str) -> bool:
    return _sensitive_parts(_key_parts(key))


def _sensitive_parts(parts: tuple[str, ...]) -> bool:
    if not parts or any(part in _METADATA_PARTS for part in parts):
        return False
    if any("password" in part or "passwd" in part for part in parts):
        return True
    return any(
        parts[start : start + size] in terms
        for size, terms in _TERMS_BY_SIZE
        for start in range(len(parts) - size + 1)
    )


def _is_sensitive_name(name: str) -> bool:
    return _memo(_NAME_VERDICTS, name, _is_sensitive_env_name)


def _is_sensitive_env_name(name: str) -> bool:
    parts = _key_parts(name)
    if _sensitive_parts(parts):
        return True
    return (
        name.isupper()
        and len(parts) > 1
        and parts[-1] in _ENV_SUFFIXES
        and not any(part in _METADATA_PARTS for part in parts)
    )


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def _already(value: str) -> bool:
    return value.strip("\"' ").startswith("[REDACTED")


# An Azure SAS token's `sig=` in a query string (a bare `sig = ...` in code is not a secret).
_SAS_SIGNATURE = re.compile(r"([?&]sig=)([^&\s\"'#]{8,}+)", re.I)
_URL_PASSWORD = re.compile(
    "(" + after_boundary("[a-z]", width=1) + r"[a-z0-9+.-]{0,30}://[^\s:/@]*+:)([^\s@/]++)@",
    re.I,
)
# A credential in a URL's query or fragment (`?key=...`, `&code=...`, `#access_token=...`,
# `X-Amz-Signature=...`): only right after `?`, `&` or `#`, so `key = value` in code and
# `sort_key=created_at` are left alone (the name is compared whole, see `_url_param_masked`).
# A value stops at `?` too: a URL nested in a parameter (`?next=https://...?sig=...`) has its
# own query, scanned in turn.
_URL_PARAM = re.compile(r"([?&#]([A-Za-z][\w.-]{0,60}+)=)([^?&\s\"'#<>\\]++)")
# `scheme://<token>@host`: a token used as the user name (no password after it).
_URL_USER_TOKEN = re.compile(
    "(" + after_boundary("[a-z]", width=1) + r"[a-z0-9+.-]{0,30}://)([^\s:/@?#.]{16,}+)@", re.I
)
# Query names that hold a credential whatever their value looks like (normalised: lower case,
# `-` and `.` as `_`). `key` alone is one (`?key=...`, Google's API key parameter); a longer name
# ending in `_key` is only when listed (`sort_key`, `partition_key` are not).
_URL_SECRET_PARAMS: Final = frozenset(
    {
        "key", "apikey", "api_key", "access_key", "secret_key", "private_key", "subscription_key",
        "secret", "client_secret", "password", "passwd", "pwd", "pass", "passphrase",
        "sig", "signature", "token", "access_token", "refresh_token", "id_token", "auth",
        "auth_token", "authorization", "credential", "credentials", "session", "sessionid",
        "session_id", "jwt", "assertion", "client_assertion", "x_amz_signature",
        "x_amz_credential", "x_amz_security_token", "x_goog_signature", "x_goog_credential",
    }
)  # fmt: skip
# Names that hold a credential only when the value looks like one (`?code=python` is a search,
# `?code=4/0AfJohXk...` an OAuth authorization code).
_URL_CODE_PARAMS: Final = frozenset({"code", "otp"})


def _url_param_masked(name: str, value: str) -> bool:
    normal = name.lower().replace("-", "_").replace(".", "_")
    parts = _key_parts(name)
    if normal in _URL_SECRET_PARAMS or (parts and parts[-1] == "signature"):
        return True
    if normal in _URL_CODE_PARAMS:
        return len(value) >= 8 and any(c.isdigit() for c in value) and not is_wordlike(value)
    return _is_sensitive_name(name) and not is_prose(value)


def _mask_url_param(match: re.Match[str]) -> str:
    value = match.group(3)
    if _already(value) or not _url_param_masked(match.group(2), value):
        return match.group(0)
    return match.group(1) + _marker("url_credential")


def _mask_url_password(match: re.Match[str]) -> str:
    # `scheme://[REDACTED:url_credential]@`: the marker's own colon is not a password.
    if match.group(1).endswith("://[REDACTED:"):
        return match.group(0)
    return match.group(1) + _marker("url_password") + "@"


def _mask_url_user(match: re.Match[str]) -> str:
    user = match.group(2)
    if _already(user) or not (any(c.isdigit() for c in user) and any(c.isalpha() for c in user)):
        return match.group(0)  # `https://deployment-bot@host`: a name, not a token
    return match.group(1) + _marker("url_credential") + "@"


# `name: value` at the start of a line (YAML, HTTP headers, logs): the value runs to line end.
_COLON_LINE = re.compile(
    r"""^([ \t]*+(?:-[ \t]+)?["']?)([A-Za-z_][\w.-]*+)(["']?[ \t]*+:[ \t]*+)(\S(?:[^\n]*\S)?)""",
    re.M,
)
# `"name": "value"` / `'name': 'value'` / `"name": 123` inside serialized JSON or a Python repr.
_DQ = r'"(?:\\.|[^"\\\n])*"'
_SQ = r"'(?:\\.|[^'\\\n])*'"
_QUOTED_PAIR = re.compile(
    r"""(["'])([^"'\n]{1,100})\1(\s*:\s*)""" + rf"({_DQ}|{_SQ}|-?\d[\d.]*|true|false)"
)
# `NAME=value` anywhere: env dumps, query strings, `--password=value`.
# Inside a repr or JSON text a line break is the two characters `\n`: it starts a name and
# ends an unquoted value, as a real line break does.
# A name never starts inside a word or after a dash: that keeps one long dashed run from being
# rescanned from each of its letters (quadratic).
_ASSIGNMENT = re.compile(
    r"(?:(?<![A-Za-z0-9_\\-])|(?<=\\[nrt]))-{0,2}([A-Za-z_][\w-]*+)([ \t]*+=[ \t]*+)"
    + rf"""({_DQ}|{_SQ}|(?:[^\s,;&"'\\]|\\(?![nrt]))++)"""
)
# The start check sits behind the first dash, so the engine only stops at dashes.
_CLI_FLAG = re.compile(
    r"(-(?:(?<![\w\\-].)|(?<=\\[nrt].))-?)([A-Za-z][\w-]*+)(\s++)([^\s-]\S*+)"
)


def _is_password_name(name: str) -> bool:
    return any(p in ("pwd", "pass") or "passw" in p or "passphrase" in p for p in _key_parts(name))


def _mask_named(name_group: int, value_group: int) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        value = match.group(value_group)
        name = match.group(name_group)
        if not _is_sensitive_name(name) or _already(value):
            return match.group(0)
        # `Token: a small gift` is a sentence; a passphrase may be words too, so not for passwords.
        if is_prose(value) and not _is_password_name(name):
            return match.group(0)
        # Keep the quotes, so redacted JSON inside a string stays parseable.
        quote = value[0] if value[0] in "\"'" and len(value) > 1 and value[-1] == value[0] else ""
        offset = match.start(0)
        start, end = match.start(value_group) - offset, match.end(value_group) - offset
        text = match.group(0)
        return text[:start] + quote + REDACTED + quote + text[end:]

    return replace


_MASK_NAME_2_VALUE_4: Final = _mask_named(2, 4)
_MASK_NAME_1_VALUE_3: Final = _mask_named(1, 3)


# `the Twilio auth token is 5f0c...`, `password: hunter2!` mid-sentence: a credential word, a
# short joiner, then one credential-like token (checked by `_mask_keyword`).
# The keyword starts with one letter checked against BOUNDARY, then the rest of the word, so the
# engine only stops at those letters (one pattern, linear, no look-behind at every position).
_KEYWORD = (
    after_boundary("[tspacTSPAC]", width=1)
    + r"(?:(?<=[tT])oken|(?<=[sS])ecret(?:[ _-]?key)?"
    r"|(?<=[pP])(?:ass(?:w(?:or)?d|phrase)|wd|rivate[ _-]?key)"
    r"|(?<=[aA])(?:pi[ _-]?key|pp[ _-]?key|ccess[ _-]?key|ccount[ _-]?key)"
    r"|(?<=[cC])redentials?)"
)
_KEYWORD_VALUE = re.compile(
    f"({_KEYWORD})"
    r"((?:[ \t]++(?:is|was|=|:)|[ \t]*+[:=])[ \t]*+[\"'`]?)"
    r"([^\s\"'`,;]{6,}+)",
    re.I,
)
# Every `_KEYWORD` contains one of these stems (any case): a text without them skips that pass.
_KEYWORD_STEM = re.compile(
    r"a(?:pi|pp|cc(?:ess|ount))|credential|p(?:ass|wd|rivate)|secret|token", re.I
)
_PASSWORD_WORDS: Final = frozenset({"password", "passwd", "passphrase", "pwd"})


def _credential_like(value: str, password: bool) -> bool:
    """A value after `password is` / `api key:` that is a credential, not a word or a name."""
    value = value.rstrip(".,;:!?)")
    if _already(value) or value.startswith(("/", "http:", "https:", "./", "~")):
        return False
    if not any(c.isalpha() for c in value) or is_wordlike(value):
        return False
    if password:  # `hunter2!`, `p@ss-w0rd`; not `missing.`, `HiddenText`, `split_auth(`
        return len(value) >= 6 and any(c.isdigit() or c in "!@#$%^&*+=?~" for c in value)
    return len(value) >= 12 and any(c.isdigit() for c in value)


def _mask_keyword(match: re.Match[str]) -> str:
    password = match.group(1).lower() in _PASSWORD_WORDS
    if not _credential_like(match.group(3), password):
        return match.group(0)
    return match.group(1) + match.group(2) + REDACTED


def _mask_shape(kind: str, needs_digit: bool) -> Callable[[re.Match[str]], str]:
    marker = _marker(kind)

    def replace(match: re.Match[str]) -> str:
        if needs_digit and not any(c.isdigit() for c in match.group(0)):
            return match.group(0)
        return marker

    return replace


def _mask_bearer(match: re.Match[str]) -> str:
    if is_wordlike(match.group(2)) or _already(match.group(2)):
        return match.group(0)  # "Bearer instruments are not accepted"
    return match.group(1) + _marker("bearer")


def _mask_basic(match: re.Match[str]) -> str:
    if not is_basic_credential(match.group(2)):
        return match.group(0)  # "Basic usage: ..."
    return match.group(1) + _marker("basic_auth")


def _mask_random(match: re.Match[str]) -> str:
    if not looks_random(match.group(0)):
        return match.group(0)
    head, rest = split_path_prefix(match.group(0))
    if head and looks_random(rest):  # `docs/d/<id>` keeps its plain path words
        return head + _marker("high_entropy")
    return _marker("high_entropy")


# Texts found to hold no secret, remembered (short ones only: identifiers, digests, names and
# values that recur in every event of a call). Nothing masked is ever remembered.
_CLEAN_MAX_CHARS: Final = 256
_CLEAN: dict[str, None] = {}
# Every name- and header-based pass needs one of these in the text it scans.
_NAMED_HINT = re.compile(r"[\s:=]")


def redact_text(text: str) -> str:
    """Mask every secret-shaped substring of `text`, including inside multi-line dumps."""
    exact = type(text) is str
    if exact and text in _CLEAN:
        return text
    masked = _redact_text(text)
    if exact and masked == text and len(text) <= _CLEAN_MAX_CHARS:
        if len(_CLEAN) >= _MEMO_SIZE:
            _CLEAN.clear()
        _CLEAN[text] = None
    return masked


# Proctor's own digests (`sha256:<hex>`, `hmac-sha256:<hex>`), in every audit event: lower-case
# hex matches no shape, no name and no random run (which needs both cases).
_DIGEST = re.compile(r"(?:hmac-)?sha256:[0-9a-f]{64}")


def _redact_text(text: str) -> str:
    if _DIGEST.fullmatch(text) is not None:
        return text
    # Each pass is skipped only where it cannot match the text it would scan (too short, or a
    # character it needs is absent), so the result is the same as running them all.
    low = text.lower()
    if len(text) >= SHAPE_MIN_CHARS:
        text = _mask_shapes(text, low)
    if _NAMED_HINT.search(text) is not None:
        text = _mask_named_values(text, low)
    if len(text) >= RANDOM_RUN_MIN_CHARS:
        text = _mask_random_runs(text)
    return text


# SHAPES in their order, each with its masker and keywords (None: no keyword, always checked).
_Shape = tuple[re.Pattern[str], Callable[[re.Match[str]], str], tuple[str, ...] | None]
_ALL_SHAPES: Final[tuple[_Shape, ...]] = tuple(
    (pattern, _mask_shape(kind, needs_digit), KEYWORDS.get(kind))
    for kind, pattern, needs_digit in SHAPES
)
_UNKEYED_SHAPES: Final = tuple(shape for shape in _ALL_SHAPES if shape[2] is None)


def _mask_shapes(text: str, low: str) -> str:
    keyed = ANY_KEYWORD.search(low) is not None
    for pattern, mask, keys in _ALL_SHAPES if keyed else _UNKEYED_SHAPES:
        if keys is None:
            if len(text) < UNKEYED_SHAPE_MIN_CHARS:
                continue
        elif not any(k in low for k in keys):
            continue
        text = pattern.sub(mask, text)
    return text


def _mask_named_values(text: str, low: str) -> str:
    if "://" in low:
        text = _URL_PASSWORD.sub(_mask_url_password, text)
    if "sig=" in low:
        text = _SAS_SIGNATURE.sub(lambda m: m.group(1) + _marker("sas_signature"), text)
    if "=" in text and ("?" in text or "&" in text or "#" in text):
        text = _URL_PARAM.sub(_mask_url_param, text)
    if "@" in text and "://" in low:
        text = _URL_USER_TOKEN.sub(_mask_url_user, text)
    if "bearer" in low:
        text = BEARER.sub(_mask_bearer, text)
    if "basic" in low:
        text = BASIC.sub(_mask_basic, text)
    # Each gate is a character the pattern cannot match without, checked on the text it scans.
    if ":" in text:
        text = _COLON_LINE.sub(_MASK_NAME_2_VALUE_4, text)
    if ":" in text and ('"' in text or "'" in text):
        text = _QUOTED_PAIR.sub(_MASK_NAME_2_VALUE_4, text)
    if "=" in text:
        text = _ASSIGNMENT.sub(_MASK_NAME_1_VALUE_3, text)
    if "-" in text:
        text = _CLI_FLAG.sub(_MASK_NAME_2_VALUE_4, text)
    if _KEYWORD_STEM.search(text) is None:
        return text
    return _KEYWORD_VALUE.sub(_mask_keyword, text)


def _mask_random_runs(text: str) -> str:
    out: list[str] = []
    pos = 0
    for start, end in public_blocks(text):
        out.append(RANDOM_RUN.sub(_mask_random, text[pos:start]))
        out.append(text[start:end])
        pos = end
    out.append(RANDOM_RUN.sub(_mask_random, text[pos:]))
    return "".join(out)


def redact(value: Any) -> Any:
    """A deep copy of JSON-like `value` with secrets masked by key name and by shape.

    Anything under a sensitive key is masked whole, whatever its type (except `None`);
    tuples come back as lists. Keys themselves are kept as they are.
    """
    # Exact JSON types first: identity checks are cheap, a Mapping check is an ABC lookup.
    kind = type(value)
    if kind is str:
        return value if value in _CLEAN else redact_text(value)
    if kind is dict:
        return _redact_mapping(value)
    if kind is list:
        return [redact(item) for item in value]
    if value is None or kind is int or kind is float or kind is bool:
        return value
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return _redact_mapping(value)
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    return value


def _redact_mapping(value: Mapping[Any, Any]) -> dict[Any, Any]:
    # `redact` per item, with the name memo and the exact-scalar cases inlined: an audit
    # record is mostly short text keys over scalars, and this runs for every record.
    out: dict[Any, Any] = {}
    verdicts = _NAME_VERDICTS
    clean = _CLEAN
    for key, item in value.items():
        if item is None:
            out[key] = None
            continue
        if type(key) is str:
            sensitive = verdicts.get(key)
            if sensitive is None:
                sensitive = _is_sensitive_name(key)
        else:
            sensitive = isinstance(key, str) and _is_sensitive_name(key)
        if sensitive:
            out[key] = REDACTED
            continue
        kind = type(item)
        if kind is str:
            out[key] = item if item in clean else redact_text(item)
        elif kind is int or kind is bool or kind is float:
            out[key] = item
        else:
            out[key] = redact(item)
    return out
