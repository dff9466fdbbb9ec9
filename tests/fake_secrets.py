"""Fabricated secrets for the leak tests: each must be absent from everything Proctor stores,
shows, exports or sends to the model (unless a policy says `allow`)."""

from __future__ import annotations

from governance.tools import SEED_FILES

# The demo workspace's staging key (secrets/api_keys.txt), the value after `=`.
STAGING_KEY = SEED_FILES["secrets/api_keys.txt"].strip().partition("=")[2]
GITHUB = "ghp_FakeLeakTestToken0123456789abcdefWXYZ"
AWS = "AKIAFAKELEAKTEST0123"
OPENAI = "sk-FakeLeakTest0123456789abcdefFAKEkey"

# What a tool returns: a config dump holding all four.
CONFIG_DUMP = (
    f"STAGING_API_KEY={STAGING_KEY}\n"
    f"github: {GITHUB}\n"
    f"aws_id {AWS} region eu-west-1\n"
    f"openai key {OPENAI}\n"
)
ALL = (STAGING_KEY, GITHUB, AWS, OPENAI)


def leaked(text: str, secrets: tuple[str, ...] = ALL) -> list[str]:
    """The secrets (or their distinctive middles) that appear in `text`."""
    return [s for s in secrets if s in text or s[4:-4] in text]
