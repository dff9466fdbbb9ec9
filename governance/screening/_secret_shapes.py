"""Shapes that are secrets wherever they appear, and a test for random-looking tokens.

Pure, no I/O. Prefixes, lengths and alphabets are facts from the vendors' documentation as
collected by gitleaks' default rules; the expressions are written here. Every pattern is a
literal prefix followed by single character classes (no nested quantifiers), so matching stays
linear in the length of the text.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Final

# A prefix glued to a word (`id-ghp_...`, `(sk-...)`) is still found; a short prefix must not
# be the tail of a longer word (`task-queue-...` is not an OpenAI key). After a percent-escape
# (`%22sk-...`) or a backslash escape (`\nsk-...` in a repr or JSON text) it starts a token too.
BOUNDARY: Final = r"(?:(?<![A-Za-z0-9])|(?<=%[0-9A-Fa-f]{2})|(?<=\\[nrt]))"


def after_boundary(*prefixes: str, width: int = 0) -> str:
    """`prefix` with BOUNDARY checked behind it rather than before it.

    Same meaning, but the pattern starts with its prefix, so the regex engine jumps between
    occurrences instead of testing three look-behinds at every position of the text.
    """
    branches = []
    for prefix in prefixes:
        skip = f".{{{width or len(prefix)}}}"
        branches.append(
            f"{prefix}(?:(?<![A-Za-z0-9]{skip})|(?<=%[0-9A-Fa-f]{{2}}{skip})|(?<=\\\\[nrt]{skip}))"
        )
    return "(?:" + "|".join(branches) + ")"


_R = r"(?![A-Za-z0-9])"
_U = r"[A-Za-z0-9_-]"  # base64url alphabet

# (kind, pattern, the match must contain a digit): checked in this order, whole blocks first.
SHAPES: Final[tuple[tuple[str, re.Pattern[str], bool], ...]] = tuple(
    (kind, re.compile(pattern, flags), needs_digit)
    for kind, pattern, flags, needs_digit in (
        (
            "private_key",
            r"-----BEGIN[ A-Z0-9_-]{0,60}PRIVATE KEY(?: BLOCK)?-----"
            r".*?(?:-----END[ A-Z0-9_-]{0,60}PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
            False,
        ),
        (
            "jwt",
            after_boundary("eyJ") + r"[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{2,}+\.[A-Za-z0-9_-]*+",
            0,
            False,
        ),
        (
            "slack_webhook",
            r"hooks\.slack\.com/(?:services|workflows|triggers)/[\w+/-]{20,}+",
            0,
            False,
        ),
        ("discord_webhook", r"discord(?:app)?\.com/api/webhooks/\d{5,25}/[\w-]{20,}+", 0, False),
        ("anthropic_key", r"sk-ant-[a-z]{2,10}\d{2}-" + _U + "{20,}+", 0, False),
        ("openai_key", after_boundary("sk-", "SK-") + _U + "{16,}+", 0, True),
        (
            "stripe_key",
            after_boundary("sk_", "rk_", "SK_", "RK_", "whsec_")
            + r"(?:(?i:live|test|prod)_)?[A-Za-z0-9]{10,}+",
            0,
            True,
        ),
        (
            "aws_access_key_id",
            "(?:"
            + after_boundary("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "ANPA", "AIPA")
            + "|"
            + after_boundary("A3T[A-Z0-9]", width=4)
            + ")[A-Z0-9]{16}"
            + _R,
            0,
            False,
        ),
        ("github_token", r"gh[pousr]_[A-Za-z0-9]{20,}+", 0, False),
        ("github_token", r"github_pat_\w{20,}+", re.A, False),
        (
            "gitlab_token",
            r"(?:gl(?:pat|dt|rt|ptt|cbt|ft|imt|oas|soat|agent|ffct)-|GR1348941)" + _U + "{20,}+",
            0,
            False,
        ),
        ("slack_token", r"xox[abposre]-[A-Za-z0-9-]{8,}+|xapp-\d-[A-Za-z0-9-]{10,}+", re.I, False),
        ("google_api_key", r"AIza" + _U + "{35}", 0, False),
        ("hf_token", after_boundary("hf_", "api_org_") + r"[A-Za-z0-9]{30,}+", 0, False),
        ("twilio_key", after_boundary("SK") + r"[0-9a-fA-F]{32}" + _R, 0, False),
        (
            "sendgrid_key",
            after_boundary(r"SG\.", width=3) + _U + r"{16,32}\." + _U + "{16,64}+",
            0,
            False,
        ),
        ("mailgun_key", after_boundary("key-", "pubkey-") + r"[0-9a-f]{32}" + _R, 0, False),
        ("telegram_bot_token", r"(?<!\d)\d{5,16}:AA" + _U + "{30,}+", 0, False),
        (
            "discord_bot_token",
            after_boundary("[MNO]", width=1)
            + r"[A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![\w-])",
            re.A,
            False,
        ),
        (
            "square_token",
            f"(?:{after_boundary('sq0atp-')}{_U}{{22,}}+|{after_boundary('sq0csp-')}{_U}{{40,}}+"
            f"|{after_boundary('EAAA')}{_U}{{40,}}+)",
            0,
            False,
        ),
        ("shopify_token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", 0, False),
        ("digitalocean_token", r"do[opr]_v1_[a-f0-9]{64}", 0, False),
        ("npm_token", r"npm_[A-Za-z0-9]{36,}+", 0, False),
        ("pypi_token", r"pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)" + _U + "{20,}+", 0, False),
        ("heroku_key", r"HRKU-" + _U + "{20,}+", 0, False),
        ("vault_token", after_boundary(r"hv[sb]\.", width=4) + _U + "{24,}+", 0, False),
        ("vault_token", r"(?<![A-Za-z0-9.])s\.[A-Za-z0-9]{24}" + _R, 0, True),
        (
            "vendor_token",
            # Databricks, Grafana, Prefect, Linear, Perplexity, age, Sentry, RubyGems, Brevo,
            # Atlassian, Doppler, Postman, Pulumi, Shippo, PlanetScale, Artifactory.
            r"(?:dapi[a-f0-9]{32}|glsa_[A-Za-z0-9]{32}|glc_[A-Za-z0-9+/]{32,}+|pnu_[A-Za-z0-9]{36}"
            r"|lin_api_[A-Za-z0-9]{40}|pplx-[A-Za-z0-9]{48}|AGE-SECRET-KEY-1[0-9A-Z]{58}"
            r"|sntry[us]_[A-Za-z0-9+/=_]{40,}+|rubygems_[a-f0-9]{48}|xkeysib-[a-f0-9]{64}"
            r"|ATATT3[A-Za-z0-9_=-]{40,}+|dp\.pt\.[A-Za-z0-9]{40,}+|PMAK-[a-f0-9]{24}-[a-f0-9]{34}"
            r"|pul-[a-f0-9]{40}|shippo_(?:live|test)_[a-f0-9]{40}|pscale_(?:tkn|pw|oauth)_[\w.=-]{32,}+"
            r"|AKCp[A-Za-z0-9]{60,}+)",
            0,
            False,
        ),
    )
)

# Lower-case substrings a shape cannot match without (gitleaks calls them keywords): a text
# without any of them skips that pass, which keeps secret-free text cheap. A kind not listed
# always runs. Markers (`[REDACTED:kind]`) contain none of these, so checking the original text
# once is sound.
KEYWORDS: Final[dict[str, tuple[str, ...]]] = {
    "private_key": ("private key",),
    "jwt": ("eyj",),
    "slack_webhook": ("hooks.slack.com",),
    "discord_webhook": ("/api/webhooks/",),
    "anthropic_key": ("sk-ant-",),
    "openai_key": ("sk-",),
    "stripe_key": ("sk_", "rk_", "whsec_"),
    "aws_access_key_id": (
        "akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "anpa", "aipa", "a3t",
    ),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab_token": ("gl", "gr1348941"),
    "slack_token": ("xox", "xapp-"),
    "google_api_key": ("aiza",),
    "hf_token": ("hf_", "api_org_"),
    "sendgrid_key": ("sg.",),
    "mailgun_key": ("key-",),
    "telegram_bot_token": (":aa",),
    "square_token": ("sq0atp-", "sq0csp-", "eaaa"),
    "shopify_token": ("shp",),
    "digitalocean_token": ("_v1_",),
    "npm_token": ("npm_",),
    "pypi_token": ("pypi-age",),
    "heroku_key": ("hrku-",),
    "vault_token": ("hvs.", "hvb.", "s."),
}  # fmt: skip

# The fewest characters any shape matches, and any shape without keywords (checked on every
# text long enough): a shorter text skips those passes. A test pins both against the patterns.
SHAPE_MIN_CHARS: Final = 13
UNKEYED_SHAPE_MIN_CHARS: Final = 32


_Trie = dict[str, "_Trie"]


def any_of(words: set[str]) -> re.Pattern[str]:
    """One pattern that finds any of `words`, written as a trie (`a(?:3t|bia|...)`) so the
    engine tests one character per position instead of every word; a word that another
    starts with stands for both (finding `sk-` is enough, `sk-ant-` adds nothing)."""
    trie: _Trie = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def branch(node: _Trie) -> str:
        if "" in node:
            return ""
        parts = [re.escape(char) + branch(child) for char, child in sorted(node.items())]
        return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"

    return re.compile(branch(trie))


# One scan for every keyword at once: a text with none of them skips every keyed shape.
ANY_KEYWORD: Final = any_of({key for keys in KEYWORDS.values() for key in keys})

# `Authorization: Basic <base64 of user:password>`: only when it really decodes to `a:b`.
BASIC = re.compile(r"\b(basic\s++)([A-Za-z0-9+/]{6,}+={0,2}+)", re.I)
BEARER = re.compile(r"\b(bearer\s++)([A-Za-z0-9\-._~+/]{8,}+=*+)", re.I)

# A long run of base64 / base64url characters, judged by `looks_random`.
RANDOM_RUN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{32,}+={0,2}+")
RANDOM_RUN_MIN_CHARS: Final = 32

_WORD = re.compile(r"[A-Za-z]+[.,;:!?]?")


def is_wordlike(value: str) -> bool:
    """A plain word, as in `Bearer instruments`: letters only, not camel-cased."""
    return value.isalpha() and (value.islower() or value.istitle() or value.isupper())


def is_prose(value: str) -> bool:
    """Two or more plain words (`a small gift from the team`): text, not a credential."""
    words = value.split()
    return len(words) >= 2 and all(_WORD.fullmatch(w) for w in words)


def _decode(token: str) -> bytes | None:
    body = token.rstrip("=")
    if len(body) % 4 == 1:
        return None
    padded = body + "=" * (-len(body) % 4)
    try:
        if any(c in body for c in "-_"):
            return base64.b64decode(padded, altchars=b"-_", validate=True)
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None


def _is_text(raw: bytes | None) -> bool:
    if not raw:
        return False
    printable = sum(1 for b in raw if 32 <= b < 127 or b in (9, 10, 13))
    return printable >= 0.9 * len(raw)


def _is_public_der(raw: bytes | None) -> bool:
    """DER of a public key or certificate: a SEQUENCE whose first element is a SEQUENCE.

    A private key's DER starts with a version INTEGER instead, so it is not exempt.
    """
    if not raw or len(raw) < 8 or raw[0] != 0x30:
        return False
    header = 2 if raw[1] < 0x80 else 2 + (raw[1] & 0x7F)
    return len(raw) > header and raw[header] == 0x30


def decodes_to_text(token: str) -> bool:
    """True when `token` is base64 of readable text (an encoded sentence, not a key)."""
    return _is_text(_decode(token))


def is_basic_credential(token: str) -> bool:
    """True when `token` is base64 of `user:password`."""
    raw = _decode(token)
    return _is_text(raw) and raw is not None and b":" in raw


_PUBLIC_BEGIN = re.compile(
    r"-----BEGIN (?:[A-Z0-9 ]{0,20}PUBLIC KEY(?: BLOCK)?|(?:TRUSTED |X509 )?CERTIFICATE"
    r"(?: REQUEST)?|NEW CERTIFICATE REQUEST|X509 CRL)-----"
)


def public_blocks(text: str) -> list[tuple[int, int]]:
    """Spans of closed PEM public key / certificate blocks: public by design, never masked.

    One forward scan with `str.find`, so a thousand unclosed headers cost one pass, not a
    thousand.
    """
    spans: list[tuple[int, int]] = []
    pos = 0
    while (begin := _PUBLIC_BEGIN.search(text, pos)) is not None:
        end = text.find("-----END ", begin.end())
        close = text.find("-----", end + 9) if end >= 0 else -1
        if close < 0:
            break
        spans.append((begin.start(), close + 5))
        pos = close + 5
    return spans


def split_path_prefix(run: str) -> tuple[str, str]:
    """`com/document/d/1rda...` -> (`com/document/d/`, `1rda...`): keep a URL's plain words."""
    head = 0
    for segment in run.split("/")[:-1]:
        if not (segment.isalpha() and segment.islower()) and segment:
            break
        head += len(segment) + 1
    return run[:head], run[head:]


def _char_class(c: str) -> int:
    return 0 if c.isupper() else 1 if c.islower() else 2


_SRI = re.compile(r"sha(?:1|256|384|512)-")
_SYLLABLES = re.compile(r"[a-z]{3,}")
# A name glued to a digest (`NODE_SEA_FUSE_fce680ab...`): every part a word or hex.
_NAME_OR_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+|[A-Z]?[a-z]+|[A-Z]+")
# File signatures of base64-encoded data (a `data:image/png;base64,...` URI is not a key).
_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"%PDF", b"PK\x03\x04", b"\x1f\x8b", b"RIFF")


def looks_random(token: str) -> bool:
    """A machine-made secret rather than an identifier, digest, path or encoded text.

    Random base64 mixes upper case, lower case and digits and switches between them on about
    six characters in ten; names (`AuthProviderPanel2`), hex digests, UUIDs, dashed slugs and
    paths do not. Base64 that decodes to readable text is encoded prose, and DER that starts
    like a public key or certificate is public, so neither is a secret.
    """
    body = token.rstrip("=")
    if body == body.lower() or body == body.upper():
        return False  # one case only (a hex digest, a slug): the mixed-case test below fails
    if _SRI.match(body) or body.startswith("_Z"):
        return False  # an integrity digest (`sha512-<base64>`) or a C++ mangled symbol
    parts = re.split(r"[_-]", body)
    if len(parts) > 1 and all(_NAME_OR_HEX.fullmatch(p) for p in parts if p):
        return False
    alnum = [c for c in body if c.isascii() and c.isalnum()]
    if len(alnum) < 28 or len(body) - len(alnum) > len(body) // 8:
        return False
    if not (any(c.isupper() for c in alnum) and any(c.islower() for c in alnum)):
        return False
    if not any(c.isdigit() for c in alnum):
        return False
    switches = sum(
        1 for a, b in zip(alnum, alnum[1:], strict=False) if _char_class(a) != _char_class(b)
    )
    if switches < 0.35 * (len(alnum) - 1) or body.startswith("AAAA"):
        return False  # `AAAA...`: an SSH public key blob (`ssh-ed25519 AAAAC3Nza...`)
    # Camel-cased words (`RetryPolicyV3Handler`): most characters sit in runs of three or more
    # lower-case letters; in random base64 about one in five does.
    if sum(map(len, _SYLLABLES.findall(body))) >= 0.5 * len(body):
        return False
    raw = _decode(token)
    return not (_is_text(raw) or _is_public_der(raw) or (raw or b"").startswith(_MAGIC))
