"""The guardrail's settings never show the store URL's password (a log line or a debugger
printing them would leak it)."""

from __future__ import annotations

from governance.litellm import settings_from

SECRET = "s3cretPW"


def test_the_settings_repr_leaves_the_store_url_out() -> None:
    url = f"postgresql://proctor:{SECRET}@db.internal:5432/proctor"
    settings = settings_from({"proctor_policy": "p.yaml", "proctor_store_url": url}, {})
    assert settings.store_url == url  # kept for the gateway
    assert SECRET not in repr(settings) and SECRET not in str(settings)
