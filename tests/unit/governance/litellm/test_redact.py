"""What reaches the server log about a failed store: never its password."""

from __future__ import annotations

import pytest

from governance.litellm._redact import password_of, scrubbed

URL = "postgresql://proctor:s3cr%zzet@db.internal:5432/proctor"


@pytest.mark.parametrize(
    "message",
    [
        'invalid percent-encoded token: "s3cr%zzet"',
        f"cannot reach {URL}",
        "connection to server failed: password=s3cr%zzet host=db.internal",
        "FATAL: password authentication failed; dsn postgresql://u:other-secret@h/db",
    ],
)
def test_the_store_password_never_survives_scrubbing(message: str) -> None:
    clean = scrubbed(message, URL)
    assert "s3cr" not in clean
    assert "other-secret" not in clean
    assert "***" in clean


def test_a_percent_encoded_password_is_scrubbed_decoded_too() -> None:
    url = "postgresql://proctor:p%40ss%21word@db/proctor"
    assert "p@ss!word" not in scrubbed("auth failed for p@ss!word", url)
    assert password_of(url) == "p%40ss%21word"
    assert password_of("postgresql://proctor@db/proctor") is None
    assert password_of("sqlite") is None
