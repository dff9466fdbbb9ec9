"""Write `corpus.json`: fabricated secrets of many kinds, and look-alikes that are not secrets.

Every value is fake: built from the documented prefix, length and alphabet of each format (facts
collected from gitleaks' rules and the vendors' docs) with a body drawn from a seeded RNG, so the
file is the same on every run. Run `python tests/unit/governance/redaction_corpus/generate.py`
after editing; a test fails when the committed file and this script disagree.

A kind is `self` when its value alone identifies it (a prefix, a fixed shape, or a long random
body) and `context` when it is only a secret because of what surrounds it (a 32-hex Twilio auth
token is indistinguishable from an MD5 digest): context kinds are only presented with their
context (a secret-looking name, a key=value line, a sentence naming them).
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from pathlib import Path

SEED = 20261201
PER_KIND = 9
HERE = Path(__file__).resolve().parent

UP = string.ascii_uppercase
LOW = string.ascii_lowercase
DIG = string.digits
ALNUM = UP + LOW + DIG
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"


def _s(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64(rng: random.Random, nbytes: int, urlsafe: bool = False) -> str:
    raw = bytes(rng.getrandbits(8) for _ in range(nbytes))
    enc = base64.urlsafe_b64encode(raw) if urlsafe else base64.b64encode(raw)
    return enc.decode()


def _jwt(rng: random.Random) -> str:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    header = part({"alg": rng.choice(["HS256", "RS256", "ES256"]), "typ": "JWT"})
    body = part({"sub": f"user-{rng.randrange(10**6)}", "iat": 1700000000 + rng.randrange(10**6)})
    return f"{header}.{body}.{_b64(rng, 32, urlsafe=True).rstrip('=')}"


def _pem(rng: random.Random) -> str:
    label = rng.choice(["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"])
    body = _b64(rng, 144)
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"


def _service_account(rng: random.Random) -> str:
    """A GCP service-account key file as it is pasted: JSON, the PEM's newlines escaped."""
    doc = {
        "type": "service_account",
        "project_id": f"demo-{_s(rng, LOW, 6)}",
        "private_key_id": _s(rng, HEX, 40),
        "private_key": _pem(rng).replace("OPENSSH PRIVATE", "PRIVATE").replace("RSA ", "") + "\n",
        "client_email": f"ci@demo-{_s(rng, LOW, 6)}.iam.gserviceaccount.com",
    }
    return json.dumps(doc)


def _password(rng: random.Random) -> str:
    return _s(rng, ALNUM, rng.randint(8, 12)) + rng.choice("!#%^*") + _s(rng, ALNUM, 4)


# kind -> (self or context, generator, the env-style name a config would use)
Gen = Callable[[random.Random], str]
KINDS: dict[str, tuple[str, Gen, str]] = {
    "aws_access_key_id": (
        "self",
        lambda r: r.choice(["AKIA", "ASIA"]) + _s(r, UP + "234567", 16),
        "AWS_ACCESS_KEY_ID",
    ),
    "aws_secret_access_key": ("self", lambda r: _s(r, B64, 40), "AWS_SECRET_ACCESS_KEY"),
    "github_classic_pat": ("self", lambda r: "ghp_" + _s(r, ALNUM, 36), "GITHUB_TOKEN"),
    "github_oauth_token": ("self", lambda r: "gho_" + _s(r, ALNUM, 36), "GH_OAUTH_TOKEN"),
    "github_app_token": (
        "self",
        lambda r: r.choice(["ghs_", "ghu_", "ghr_"]) + _s(r, ALNUM, 36),
        "GITHUB_APP_TOKEN",
    ),
    "github_fine_grained_pat": (
        "self",
        lambda r: "github_pat_11" + _s(r, UP + DIG, 20) + "_" + _s(r, ALNUM, 59),
        "GH_PAT",
    ),
    "gitlab_token": (
        "self",
        lambda r: r.choice(["glpat-", "gldt-", "glrt-", "glptt-"]) + _s(r, URLSAFE, 20),
        "GITLAB_TOKEN",
    ),
    "slack_bot_token": (
        "self",
        lambda r: f"xoxb-{_s(r, DIG, 12)}-{_s(r, DIG, 13)}-{_s(r, ALNUM, 24)}",
        "SLACK_BOT_TOKEN",
    ),
    "slack_user_token": (
        "self",
        lambda r: f"xoxp-{_s(r, DIG, 12)}-{_s(r, DIG, 12)}-{_s(r, DIG, 13)}-{_s(r, HEX, 32)}",
        "SLACK_USER_TOKEN",
    ),
    "slack_app_token": (
        "self",
        lambda r: f"xapp-1-A{_s(r, UP + DIG, 10)}-{_s(r, DIG, 13)}-{_s(r, HEX, 64)}",
        "SLACK_APP_TOKEN",
    ),
    "slack_webhook": (
        "self",
        lambda r: (
            "https://hooks.slack.com/services/"
            + f"T{_s(r, UP + DIG, 8)}/B{_s(r, UP + DIG, 10)}/{_s(r, ALNUM, 24)}"
        ),
        "SLACK_WEBHOOK_URL",
    ),
    "stripe_live_secret": ("self", lambda r: "sk_live_" + _s(r, ALNUM, 24), "STRIPE_SECRET_KEY"),
    "stripe_test_secret": ("self", lambda r: "sk_test_" + _s(r, ALNUM, 24), "STRIPE_TEST_KEY"),
    "stripe_restricted": (
        "self",
        lambda r: r.choice(["rk_live_", "rk_test_"]) + _s(r, ALNUM, 24),
        "STRIPE_RESTRICTED_KEY",
    ),
    "openai_api_key": (
        "self",
        lambda r: r.choice(
            [
                "sk-proj-" + _s(r, URLSAFE, 58) + "T3BlbkFJ" + _s(r, URLSAFE, 58),
                "sk-" + _s(r, ALNUM, 20) + "T3BlbkFJ" + _s(r, ALNUM, 20),
                "sk-svcacct-" + _s(r, URLSAFE, 58) + "T3BlbkFJ" + _s(r, URLSAFE, 58),
            ]
        ),
        "OPENAI_API_KEY",
    ),
    "anthropic_api_key": (
        "self",
        lambda r: "sk-ant-api03-" + _s(r, URLSAFE, 93) + "AA",
        "ANTHROPIC_API_KEY",
    ),
    "google_api_key": ("self", lambda r: "AIza" + _s(r, URLSAFE, 35), "GOOGLE_API_KEY"),
    "gcp_service_account_key": ("self", _service_account, "GOOGLE_SERVICE_ACCOUNT_JSON"),
    "azure_storage_account_key": ("self", lambda r: _b64(r, 64), "AZURE_STORAGE_KEY"),
    "jwt": ("self", _jwt, "ID_TOKEN"),
    "pem_private_key": ("self", _pem, "TLS_PRIVATE_KEY"),
    "url_basic_auth": (
        "self",
        lambda r: f"https://deploy:{_password(r)}@git.example.com/team/app.git",
        "REPO_URL",
    ),
    "db_connection_string": (
        "self",
        lambda r: (
            r.choice(["postgres", "mysql", "mongodb+srv", "redis", "amqp"])
            + f"://app_user:{_password(r)}@db{r.randrange(9)}.internal:5432/app"
        ),
        "DATABASE_URL",
    ),
    "url_query_credential": (
        "self",
        lambda r: "https://gw.example.com/v1/items?"
        + r.choice(["key", "code", "sig", "signature", "access_token", "X-Amz-Signature"])
        + f"={_s(r, ALNUM, 6)}{r.randrange(10)}{_s(r, ALNUM, 12)}&page=2",
        "SIGNED_URL",
    ),
    "url_user_token": (
        "self",
        lambda r: (
            f"https://{_s(r, LOW, 8)}{r.randrange(10)}{_s(r, ALNUM, 20)}@git.example.com/a.git"
        ),
        "CLONE_URL",
    ),
    "twilio_api_key": ("self", lambda r: "SK" + _s(r, HEX, 32), "TWILIO_API_KEY"),
    "twilio_auth_token": ("context", lambda r: _s(r, HEX, 32), "TWILIO_AUTH_TOKEN"),
    "sendgrid_api_key": (
        "self",
        lambda r: f"SG.{_s(r, URLSAFE, 22)}.{_s(r, URLSAFE, 43)}",
        "SENDGRID_API_KEY",
    ),
    "mailgun_api_key": ("self", lambda r: "key-" + _s(r, HEX, 32), "MAILGUN_API_KEY"),
    "telegram_bot_token": (
        "self",
        lambda r: f"{r.randint(10**8, 10**10)}:AA{_s(r, URLSAFE, 33)}",
        "TELEGRAM_BOT_TOKEN",
    ),
    "discord_bot_token": (
        "self",
        lambda r: f"{r.choice('MN')}{_s(r, ALNUM, 23)}.{_s(r, URLSAFE, 6)}.{_s(r, URLSAFE, 38)}",
        "DISCORD_BOT_TOKEN",
    ),
    "discord_webhook": (
        "self",
        lambda r: f"https://discord.com/api/webhooks/{_s(r, DIG, 18)}/{_s(r, URLSAFE, 68)}",
        "DISCORD_WEBHOOK_URL",
    ),
    "square_token": (
        "self",
        lambda r: r.choice(
            [
                "sq0atp-" + _s(r, URLSAFE, 22),
                "sq0csp-" + _s(r, URLSAFE, 43),
                "EAAA" + _s(r, URLSAFE, 60),
            ]
        ),
        "SQUARE_ACCESS_TOKEN",
    ),
    "shopify_token": (
        "self",
        lambda r: r.choice(["shpat_", "shpca_", "shppa_", "shpss_"]) + _s(r, HEX, 32),
        "SHOPIFY_ACCESS_TOKEN",
    ),
    "digitalocean_token": (
        "self",
        lambda r: r.choice(["dop_v1_", "doo_v1_", "dor_v1_"]) + _s(r, HEX, 64),
        "DIGITALOCEAN_TOKEN",
    ),
    "npm_token": ("self", lambda r: "npm_" + _s(r, ALNUM, 36), "NPM_TOKEN"),
    "pypi_token": (
        "self",
        lambda r: "pypi-AgEIcHlwaS5vcmc" + _s(r, URLSAFE, r.randint(60, 150)),
        "TWINE_PASSWORD",
    ),
    "heroku_api_key": ("self", lambda r: "HRKU-AA" + _s(r, URLSAFE, 58), "HEROKU_API_KEY"),
    "heroku_legacy_api_key": (
        "context",
        lambda r: "-".join(_s(r, HEX, n) for n in (8, 4, 4, 4, 12)),
        "HEROKU_API_KEY",
    ),
    "vault_token": (
        "self",
        lambda r: r.choice(["hvs." + _s(r, URLSAFE, 95), "hvb." + _s(r, URLSAFE, 140)]),
        "VAULT_TOKEN",
    ),
    "datadog_api_key": ("context", lambda r: _s(r, HEX, 32), "DD_API_KEY"),
    "datadog_app_key": ("context", lambda r: _s(r, HEX, 40), "DD_APP_KEY"),
    "huggingface_token": ("self", lambda r: "hf_" + _s(r, UP + LOW, 34), "HF_TOKEN"),
    "generic_password": ("context", _password, "DB_PASSWORD"),
    "generic_secret": ("context", lambda r: _s(r, ALNUM, 24), "APP_SECRET"),
}


# Look-alikes: real-world strings that share a surface with secrets but are not secrets.
def _lookalikes(rng: random.Random) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []

    def add(category: str, text: str) -> None:
        out.append({"category": category, "text": text})

    for _ in range(12):
        add("git_sha", _s(rng, HEX, 40))
    for _ in range(4):
        add("git_sha", f"commit {_s(rng, HEX, 40)} (HEAD -> main)")
        add("git_sha", f"merged {_s(rng, HEX, 7)} into release")
    for _ in range(10):
        add("uuid", "-".join(_s(rng, HEX, n) for n in (8, 4, 4, 4, 12)))
    for n in (3, 17, 245, 1009, 88):
        add("order_id", f"ORD-{n:04d}")
        add("ticket_id", f"JIRA-{n} and PROJ-{n + 1} are linked")
    for _ in range(5):
        add("ticket_id", f"INC{rng.randrange(10**7):07d}")
    for v in ("1.2.3", "v10.0.0-rc.1", "2.31.0+build.5", "0.0.1-alpha", "3.12.4"):
        add("semver", f"upgraded to {v}")
    for words in (
        "hello world",
        "the quick brown fox jumps over the lazy dog",
        "configuration file loaded successfully",
        "Proctor governance firewall report for the quarter",
        "user=ada; role=reviewer; team=platform engineering",
    ):
        add("base64_text", base64.b64encode(words.encode()).decode())
    for line in (
        "Token: a small gift from the team",
        "Bearer instruments are not accepted at this branch.",
        "The bearer of this note is trusted.",
        "Forgot your password? Reset it from the login page.",
        "Keep the secret ingredient out of the recipe card.",
        "Secret: the meeting moved to Thursday",
        "The API key is rotated every 30 days by the platform team.",
        "Use a token bucket to rate-limit requests.",
        "A key insight: the session expired after idle time.",
        "tokens_used: 1234",
        "token_type: Bearer",
        "max_tokens=4096",
        "password reset email sent to ada@example.com",
        "Each token is counted once; 512 tokens fit the window.",
        "Authorization header missing; see the docs.",
        "The secret santa list is ready.",
        "Press any key to continue",
        "key: value pairs are sorted by key",
        "auth: required for write endpoints",
        "Credentials expire after 24 hours; renew them in the console.",
    ):
        add("prose", line)
    for path in (
        "/home/ada/projects/proctor/governance/screening/_redaction.py",
        "C:\\Users\\Ada\\Documents\\Quarterly Report 2026.docx",
        "reports/q3/summary-2026-10-01.md",
        "/var/lib/postgresql/16/main/base/16384/2619",
        "src/components/AuthenticationProviderSettingsPanel2.tsx",
        "/Users/AdaLovelace/Library/Application Support/Code/User/settings.json",
        "s3://analytics-bucket/exports/2026/11/30/part-00042.parquet",
        "~/.config/proctor/policy.yaml",
    ):
        add("path", path)
    for url in (
        "https://example.com/search?q=api+key+rotation&page=2",
        "https://docs.python.org/3/library/secrets.html#module-secrets",
        "https://github.com/team/repo/pull/1234/files",
        "https://git@example.com/team/repo.git",
        "postgres://db.internal:5432/app",
        "https://api.example.com/v1/tokens/count?sort=desc",
        "https://hooks.example.com/services/status",
        "http://localhost:8080/health?verbose=true",
        "https://example.com/search?code=python&lang=en",
        "https://api.example.com/v1/items?sort_key=created_at&order=asc",
        "https://ci.example.com/build?code=200#logs",
        "https://deployment-bot@git.example.com/team/repo.git",
    ):
        add("url", url)
    for ts in (
        "2026-01-01T12:34:56.789012Z",
        "2026-11-30 23:59:59+01:00",
        "Tue, 01 Dec 2026 12:00:00 GMT",
        "1764590400",
        "20261201T120000Z",
    ):
        add("timestamp", ts)
    for misc in (
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "md5: d41d8cd98f00b204e9800998ecf8427e",
        "task-queue-worker-000123456789abcdef",
        "pip install scikit-learn==1.5.0",
        "ProctorGovernanceRedactionCorpusVersion",
        "sort_key=created_at&order=asc",
        "PATH=/usr/local/bin:/usr/bin:/bin",
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n"
        "-----END PUBLIC KEY-----",
        "AKIA is the prefix AWS uses for access key ids",
        "api_key_header_name: X-API-Key",
        "Basic usage: proctor eval run",
        "skip-tests-for-now",
        "key-value store",
        "mac address 00:1A:2B:3C:4D:5E",
        "ip 10.0.12.255 port 5432",
        "ISBN 978-3-16-148410-0",
        "phone +1-202-555-0143",
        "price: 1234.56 EUR",
        "SKU-1234567890ABCDEF",
        "session started; 3 sessions_count total",
        "author: Ada Lovelace",
        "pass_rate: 0.95",
        "sig = inspect.signature(func)",
        "Do this if either the username or the password is missing.",
        "def make_rev_args(username: str, password: HiddenText) -> None:",
        "pod api-server-7d9f8b6c5d-x2k4p restarted",
        "image@sha256:3b1f0e9a6c2d4e5f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f",
        "HttpClientFactory2RetryPolicyV3HandlerBuilder",
        "integrity sha512-Vq4WfHjAXr3Zs1tL0xSgK9dG6bNnEcPz8mYwU2hQfOiJlT7aR5uMkBVpD3yCe",
        "release/2026.12.01-hotfix-auth-token-refresh",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGk3qv9Yb2l0ZXJwbGF0ZS1rZXktZm9yLXRlc3Rz ada@laptop",
    ):
        add("misc", misc)
    return out


# Prefixes long enough to survive as a 12-character window: not part of what must vanish.
_PUBLIC_PREFIXES = ("pypi-AgEIcHlwaS5vcmc", "github_pat_11", "sk-ant-api03-", "sk-svcacct-")


def secret_part(kind: str, value: str) -> str:
    """The part of `value` that must not survive redaction (a URL's host is not secret)."""
    if kind in ("url_basic_auth", "db_connection_string"):
        return value.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    if kind == "url_query_credential":
        return value.split("=", 1)[1].split("&", 1)[0]
    if kind == "url_user_token":
        return value.split("://", 1)[1].split("@", 1)[0]
    if kind in ("slack_webhook", "discord_webhook"):
        return value.rsplit("/", 1)[1]
    if kind == "gcp_service_account_key":
        return "".join(json.loads(value)["private_key"].splitlines()[1:-1])
    if kind == "pem_private_key":
        return "".join(value.splitlines()[1:-1])
    if kind == "jwt":
        return value.split(".", 1)[1]
    for prefix in _PUBLIC_PREFIXES:
        if value.startswith(prefix):
            return value[len(prefix) :]
    return value


def build(seed: int = SEED) -> dict[str, object]:
    rng = random.Random(seed)
    secrets: list[dict[str, str]] = []
    for kind, (identifies, make, env_name) in KINDS.items():
        for _ in range(PER_KIND):
            value = make(rng)
            secrets.append(
                {
                    "kind": kind,
                    "identifies": identifies,
                    "env": env_name,
                    "value": value,
                    "secret": secret_part(kind, value),
                }
            )
    return {"seed": seed, "secrets": secrets, "lookalikes": _lookalikes(rng)}


def render() -> str:
    return json.dumps(build(), indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    (HERE / "corpus.json").write_text(render(), encoding="utf-8")
