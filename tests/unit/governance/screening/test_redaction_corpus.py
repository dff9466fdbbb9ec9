"""Redaction by shape, tested against a corpus: every secret must vanish, every look-alike survive.

All secrets below are fabricated. Each entry names the discriminating substring that must be
absent from the serialized output, so a marker that leaks a tail (`[REDACTED]+/def==`) fails.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governance.screening._redaction import REDACTED, redact

# (text containing a secret, the substring that must be gone)
SECRETS: list[tuple[str, str]] = [
    ("sk-Fake0123456789abcdefFAKE0123456789abcdefXYZ", "Fake0123456789abcdef"),
    ("key is sk-proj-FAKEfakeFAKE_0123456789-abcdefghijkl", "FAKEfakeFAKE_0123456789"),
    ("SK-UPPERCASEFAKE0123456789ABCDEF", "UPPERCASEFAKE0123456789"),
    ("sk-ant-api03-FakeAnthropicKey0123456789abcdef-AA", "FakeAnthropicKey0123456789"),
    ("aws id AKIAFAKE0123456789AB in config", "AKIAFAKE0123456789AB"),
    ("ASIAFAKEFAKEFAKE0123", "ASIAFAKEFAKEFAKE0123"),
    ("ghp_FakeGitHubToken0123456789abcdefABCD", "FakeGitHubToken0123456789"),
    ("remote: gho_FakeOauthToken0123456789abcdefABCDE", "FakeOauthToken0123456789"),
    ("github_pat_11FAKEFAKE0_FakeFinegrainedToken0123456789abcdef", "FakeFinegrainedToken"),
    ("slack: xoxb-123456789012-1234567890123-FakeSlackBotToken01", "FakeSlackBotToken01"),
    ("xoxp-FAKE-0123456789-abcdefabcdef", "0123456789-abcdefabcdef"),
    (
        "jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJmYWtlLXVzZXIifQ."
        "Zm9vYmFyYmF6cXV4LWZha2Utc2lnbmF0dXJl",
        "eyJzdWIiOiJmYWtlLXVzZXIifQ",
    ),
    ("Authorization: Bearer abc+/def==", "def=="),
    ("curl -H 'Authorization: Bearer FakeOpaqueToken0123456789'", "FakeOpaqueToken0123456789"),
    ("Authorization: Basic ZmFrZXVzZXI6ZmFrZXBhc3M=", "ZmFrZXVzZXI6ZmFrZXBhc3M"),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAfakeFAKEfakeFAKEfakeFAKE\n"
        "ZmFrZWtleW1hdGVyaWFsZmFrZWtleW1hdGVyaWFs\n-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEAfakeFAKEfakeFAKEfakeFAKE",
    ),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAfakefakefake\n"
        "-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAAfakefakefake",
    ),
    ("OPENAI_API_KEY=sk-FakeEnvDump0123456789abcdefgh", "FakeEnvDump0123456789"),
    ("DB_PASSWORD=correct-horse-battery-staple", "correct-horse-battery-staple"),
    ("export GITHUB_TOKEN=0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYFAKEKEYFAKE", "wJalrXUtnFEMI"),
    ("STRIPE_KEY=rk_fake_notashape_9f8e7d6c", "rk_fake_notashape_9f8e7d6c"),
    ("sk_live_FakeStripeLive0123456789ab", "FakeStripeLive0123456789"),
    ("postgres://admin:s3cr3tP4ssw0rd@db.internal:5432/app", "s3cr3tP4ssw0rd"),
    ("GET /v1/items?api_key=f00dfeedf00dfeed&page=2", "f00dfeedf00dfeed"),
    ("password: hunter2hunter2", "hunter2hunter2"),
    ('{"client_secret": "cs_9f8e7d6c5b4a3f2e", "ok": true}', "cs_9f8e7d6c5b4a3f2e"),
    ("{'api_key': 'py-repr-fake-9f8e7d6c', 'retries': 3}", "py-repr-fake-9f8e7d6c"),
    ("Cookie: sessionid=FakeSession0123; csrftoken=FakeCsrf0123", "FakeSession0123"),
    ("Set-Cookie: session=FakeSetCookie0123; HttpOnly", "FakeSetCookie0123"),
    ("X-Api-Key: 7f3c9a2b1e0d4c5b", "7f3c9a2b1e0d4c5b"),
    ("AIzaSyFAKE-fake_FAKE0123456789abcdefghij", "FAKE-fake_FAKE0123456789"),
    ("hf_FakeHuggingFaceToken0123456789abcdef", "FakeHuggingFaceToken0123456789"),
    ("mysql --password hunter2secret -u root", "hunter2secret"),
    ("MYSQL_ROOT_PASSWORD='p@ss w0rd! with spaces'", "w0rd! with spaces"),
    ("  - token: fake-yaml-token-0123", "fake-yaml-token-0123"),
    ("GET /v1/items?key=mysecretvalue&page=2", "mysecretvalue"),
    ("http://127.0.0.1:8080/cb?code=abcDEF123ghiJKL456&state=1", "abcDEF123ghiJKL456"),
    ("https://b.s3.amazonaws.com/o?X-Amz-Signature=fa1afe1f00d&X-Amz-Date=1", "fa1afe1f00d"),
    ("https://app.example.com/cb#access_token=ya29FakeImplicit&type=bearer", "ya29FakeImplicit"),
    ("https://example.com/dl?signature=q1w2e3r4t5&expires=9", "q1w2e3r4t5"),
    ("https://ghFakeUserToken0123456789@github.com/team/app.git", "ghFakeUserToken0123456789"),
]

# Strings that look secret-adjacent but are not secrets: they must come back byte-identical.
LOOKALIKES: list[str] = [
    "hello world",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "hmac-sha256:" + "ab" * 32,
    "3f2b8c1e-9a4d-4e2b-8f6a-1c2d3e4f5a6b",
    "2026-01-01T12:34:56.789012Z",
    "/home/user/projects/proctor/governance/stores/_audit.py",
    "tokens_used: 1234",
    "max_tokens=4096",
    "author: Ada Lovelace",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "The bearer of this note is trusted.",
    "pip install scikit-learn==1.5.0",
    "task-queue-worker-000123456789abcdef",
    "https://example.com/search?page=2&sort=desc",
    "pass_rate: 0.95",
    "token_type: Bearer",
    "PATH=/usr/local/bin:/usr/bin:/bin\nHOME=/root\nLANG=C.UTF-8",
    "md5: d41d8cd98f00b204e9800998ecf8427e",
    "reach me at ada@example.com",
    "git clone https://git@example.com/team/repo.git",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "sort_key=created_at&order=asc",
    "session started; 3 sessions_count total",
    "AKIA is the prefix AWS uses",
    "api_key_header_name: X-API-Key",
    "Basic usage: proctor eval run",
    "https://example.com/search?code=python&lang=en",
    "https://api.example.com/v1/items?sort_key=created_at&order=asc",
    "https://ci.example.com/build?code=200#logs",
    "https://deployment-bot@git.example.com/team/repo.git",
    "key = config.get('key'); code = 42",
]


def _serialized(value: object) -> str:
    return json.dumps(redact(value), ensure_ascii=False)


def test_the_corpus_is_big_enough_and_every_probe_is_really_in_its_input() -> None:
    assert len(SECRETS) >= 25
    assert len(LOOKALIKES) >= 15
    for text, secret in SECRETS:
        assert secret in text, (text, secret)


@pytest.mark.parametrize(("text", "secret"), SECRETS, ids=[s for s, _ in SECRETS])
def test_secret_vanishes_as_a_bare_string(text: str, secret: str) -> None:
    out = _serialized(text)
    assert secret not in out
    assert "[REDACTED" in out


@pytest.mark.parametrize(("text", "secret"), SECRETS, ids=[s for s, _ in SECRETS])
def test_secret_vanishes_inside_a_multiline_dump_under_a_neutral_key(
    text: str, secret: str
) -> None:
    dump = f"starting tool\nHOME=/root\n{text}\nexit status 0\n"
    out = _serialized({"output": dump, "nested": [{"stderr": [dump]}]})
    assert secret not in out
    assert "HOME=/root" in out and "exit status 0" in out


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalike_survives_unchanged(text: str) -> None:
    assert redact(text) == text
    assert redact({"output": text, "items": [text]}) == {"output": text, "items": [text]}


@pytest.mark.parametrize(("text", "secret"), SECRETS, ids=[s for s, _ in SECRETS])
def test_redacting_twice_changes_nothing_more(text: str, secret: str) -> None:
    once = redact(text)
    assert redact(once) == once


def test_redacted_json_inside_a_string_stays_parseable() -> None:
    out = redact('{"client_secret": "cs_fake_0123", "n": 1}')
    assert json.loads(out) == {"client_secret": REDACTED, "n": 1}


_neutral_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40
)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(SECRETS),
    _neutral_text,
    _neutral_text,
)
def test_secret_vanishes_whatever_text_surrounds_it_on_other_lines(
    case: tuple[str, str], before: str, after: str
) -> None:
    text, secret = case
    out = _serialized(f"{before}\n{text}\n{after}")
    assert secret not in out


@settings(max_examples=200, deadline=None)
@given(_neutral_text)
def test_redaction_never_raises_and_is_idempotent_on_arbitrary_text(text: str) -> None:
    once = redact(text)
    assert isinstance(once, str)
    assert redact(once) == once
