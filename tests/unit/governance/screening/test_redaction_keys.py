"""Redaction by key name: normalised, whole-part matches, and the structure is a deep copy."""

from __future__ import annotations

import copy

import pytest

from governance.screening._redaction import REDACTED, is_sensitive_key, redact

SENSITIVE_KEYS = [
    "password",
    "Password",
    "PASSWD",
    "db_password",
    "dbPassword",
    "MYSQL_ROOT_PASSWORD",
    "passphrase",
    "secret",
    "client_secret",
    "clientSecret",
    "token",
    "github_token",
    "GITHUB_TOKEN",
    "GitHub-Token",
    "access_token",
    "refresh_token",
    "oauth_token",
    "api_key",
    "apiKey",
    "APIKey",
    "apikey",
    "api-key",
    "X-API-Key",
    "x_api_key",
    "access_key",
    "aws_secret_access_key",
    "private_key",
    "privateKey",
    "authorization",
    "Proxy-Authorization",
    "auth",
    "auth_token",
    "basic_auth",
    "cookie",
    "Set-Cookie",
    "session",
    "session_id",
    "sessionId",
    "credential",
    "credentials",
]

ORDINARY_KEYS = [
    "tokens_used",
    "max_tokens",
    "maxTokens",
    "tokensUsed",
    "author",
    "author_email",
    "token_count",
    "token_type",
    "secret_name",
    "auth_url",
    "pass_rate",
    "key",
    "sort_key",
    "primary_key",
    "description",
    "sessions",
    "path",
    "",
]


@pytest.mark.parametrize("key", SENSITIVE_KEYS)
def test_value_under_a_sensitive_key_is_masked(key: str) -> None:
    out = redact({key: "plain-looking-value-42", "keep": "visible"})
    assert out == {key: REDACTED, "keep": "visible"}


@pytest.mark.parametrize("key", ORDINARY_KEYS)
def test_value_under_an_ordinary_key_survives(key: str) -> None:
    assert not is_sensitive_key(key)
    assert redact({key: "plain-looking-value-42"}) == {key: "plain-looking-value-42"}


@pytest.mark.parametrize(
    "value", [123456, 3.5, True, ["a", "b"], {"user": "ada", "pass": "hunter2"}, ""]
)
def test_non_string_values_under_a_sensitive_key_are_masked_whole(value: object) -> None:
    out = redact({"credentials": value})
    assert out == {"credentials": REDACTED}
    assert "hunter2" not in repr(out)


def test_none_under_a_sensitive_key_stays_none() -> None:
    assert redact({"password": None}) == {"password": None}


def test_sensitive_keys_are_found_at_any_depth() -> None:
    data = {"request": {"headers": [{"Authorization": "Basic abc"}, {"Accept": "json"}]}}
    expected = {"request": {"headers": [{"Authorization": REDACTED}, {"Accept": "json"}]}}
    assert redact(data) == expected


def test_redact_returns_a_deep_copy_and_never_mutates_its_input() -> None:
    data = {"args": {"api_key": "k-123", "items": [{"note": "sk-FakeFakeFake0123456789"}]}}
    before = copy.deepcopy(data)
    out = redact(data)
    assert data == before
    out["args"]["items"].append("extra")
    assert data == before


def test_tuples_come_back_as_lists_and_scalars_as_they_were() -> None:
    assert redact({"t": ("a", 1), "n": 2, "f": 1.5, "b": False, "z": None}) == {
        "t": ["a", 1],
        "n": 2,
        "f": 1.5,
        "b": False,
        "z": None,
    }


def test_keys_themselves_are_not_rewritten() -> None:
    assert list(redact({"GitHub-Token": "x", "tokens_used": 1})) == ["GitHub-Token", "tokens_used"]


def test_env_style_secret_names_are_masked_as_mapping_keys_too() -> None:
    from governance.screening._redaction import REDACTED, redact

    env = {"DB_PASS": "hunter2", "STRIPE_KEY": "rk_live_x", "HOME": "/root", "TOKENS_USED": 5}
    assert redact({"env": env}) == {
        "env": {"DB_PASS": REDACTED, "STRIPE_KEY": REDACTED, "HOME": "/root", "TOKENS_USED": 5}
    }
