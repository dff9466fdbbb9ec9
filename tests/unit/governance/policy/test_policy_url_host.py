"""`url_host`: a policy allow-lists hosts of a URL argument, read by the parser http.get uses."""

from __future__ import annotations

import pytest

from governance import PolicyError
from governance.policy._load import parse_policy

POLICY = """\
version: 1
defaults: {unknown_tool: block, no_match: block}
rules:
  - id: docs-only
    description: fetch the docs sites only
    effect: allow
    match: {tool: http.get}
    when:
      - {arg: url, url_host: [docs.example.com, "*.python.org", "8.8.8.8"]}
  - id: no-pastebins
    description: never fetch paste sites
    effect: block
    match: {tool: http.get}
    when:
      - {arg: url, url_host: [pastebin.com]}
"""


def _holds(rule_id: str, url: object) -> bool:
    policy = parse_policy(POLICY, "policy.yaml")
    rule = next(rule for rule in policy.rules if rule.id == rule_id)
    return rule.first_failing({"url": url}) is None


@pytest.mark.parametrize(
    "url",
    [
        "https://docs.example.com/a",
        "HTTPS://DOCS.EXAMPLE.COM./a",
        "http://docs.example.com:8443/",
        "https://docs.python.org/3/",
        "https://a.b.python.org/",
        "http://134744072/",
        "http://0x8.0x8.0x8.0x8/",
    ],
)
def test_an_allow_listed_host_passes_in_any_spelling_the_fetch_reads_the_same(url: str) -> None:
    assert _holds("docs-only", url)


@pytest.mark.parametrize(
    "url",
    [
        "https://docs.example.com.evil.test/",
        "https://evil.test/docs.example.com",
        "https://docs.example.com@evil.test/",
        "https://evil.test#@docs.example.com",
        "https://evil.test\\@docs.example.com/",
        "https://python.org/",
        "https://notpython.org/",
        "ftp://docs.example.com/",
        "https://xdocs.example.com/",
        "docs.example.com",
        42,
        None,
    ],
)
def test_any_other_host_or_an_unreadable_url_does_not_pass(url: object) -> None:
    assert not _holds("docs-only", url)


@pytest.mark.parametrize(
    "url", ["https://pastebin.com/raw/x", "https://pastebin.com@x/", "http://pastebin.com:99/"]
)
def test_a_block_on_a_host_holds_for_it_and_for_urls_it_cannot_read(url: str) -> None:
    assert _holds("no-pastebins", url)


def test_a_block_on_a_host_does_not_hold_for_another_readable_host() -> None:
    assert not _holds("no-pastebins", "https://docs.example.com/")


@pytest.mark.parametrize(
    "pattern", ["https://docs.example.com", "docs.example.com/path", "*.8.8.8.8", "a..b", ""]
)
def test_a_host_pattern_that_is_not_a_plain_host_is_refused_at_load(pattern: str) -> None:
    text = POLICY.replace("docs.example.com,", f"{pattern!r},")
    with pytest.raises(PolicyError) as info:
        parse_policy(text, "policy.yaml")
    assert "policy.yaml" in str(info.value)
