"""Redaction measured over a committed corpus: what share of secrets each sink masks, and how
many look-alikes it wrongly changes.

The corpus (`redaction_corpus/corpus.json`, written by `generate.py` from a seed) holds fake
secrets of more than 40 kinds, each presented in every shape a sink sees (a bare JSON argument,
a sentence, glued to a word, `KEY=value`, a URL, multi-line output, an exception's repr...), and
look-alikes that must come back unchanged. Run with `-s` to see the measured table.
"""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from governance.screening._redaction import REDACTED, redact, redact_text
from tests.unit.governance.redaction_corpus import generate
from tests.unit.governance.redaction_corpus.presentations import (
    CORPUS,
    SINKS,
    WINDOW,
    Secret,
    false_redactions,
    load,
    masked_tally,
    survives,
    texts,
)

SECRETS, LOOKALIKES = load()
MIN_MASKED = 0.95
MAX_FALSE = 0.02


def _by_kind() -> dict[str, list[Secret]]:
    kinds: dict[str, list[Secret]] = defaultdict(list)
    for s in SECRETS:
        kinds[s.kind].append(s)
    return dict(kinds)


KINDS = _by_kind()


def test_the_committed_corpus_is_what_the_seeded_generator_writes() -> None:
    assert CORPUS.read_text(encoding="utf-8") == generate.render(), (
        f"{CORPUS} is stale: run `python {generate.__file__}` and commit the result"
    )


def test_the_corpus_is_big_and_varied_enough_to_mean_something() -> None:
    assert len(SECRETS) >= 300
    assert len(KINDS) >= 30
    assert len(LOOKALIKES) >= 100
    assert len({s.value for s in SECRETS}) == len(SECRETS)
    for s in SECRETS:
        # A PEM body is measured without its line breaks (escaped or not).
        flat = s.value.replace("\\n", "").replace("\n", "")
        assert len(s.secret) >= WINDOW and s.secret in flat, s
        assert s.identifies in ("self", "context")


def test_the_kinds_the_review_found_in_clear_are_all_in_the_corpus() -> None:
    reported = {
        "npm_token", "gitlab_token", "sendgrid_api_key", "shopify_token", "digitalocean_token",
        "pypi_token", "twilio_api_key", "twilio_auth_token", "mailgun_api_key",
        "telegram_bot_token", "discord_bot_token", "discord_webhook", "slack_webhook",
        "square_token", "aws_secret_access_key", "azure_storage_account_key",
    }  # fmt: skip
    assert reported <= set(KINDS)


@pytest.mark.parametrize("sink", list(SINKS))
def test_each_sink_masks_at_least_95_percent_with_at_most_2_percent_false_redactions(
    sink: str,
) -> None:
    masked = masked_tally(sink, SECRETS)
    false = false_redactions(sink, LOOKALIKES)
    print(
        f"\n{sink}: masked {masked.masked}/{masked.total} = {masked.rate:.2%}; "
        f"false redactions {false.masked}/{false.total} = {false.rate:.2%}"
    )
    assert masked.rate >= MIN_MASKED, "\n".join(masked.missed[:40])
    assert false.rate <= MAX_FALSE, "\n".join(false.missed)


@pytest.mark.parametrize("seed", [1, 99991])
def test_the_rates_hold_on_fresh_values_the_rules_were_never_tuned_on(seed: int) -> None:
    secrets, lookalikes = load(generate.build(seed))
    for sink in SINKS:
        masked = masked_tally(sink, secrets)
        assert masked.rate >= MIN_MASKED, f"seed {seed}, {sink}\n" + "\n".join(masked.missed[:40])
        assert false_redactions(sink, lookalikes).rate <= MAX_FALSE


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_no_kind_of_secret_is_lost_in_any_sink(kind: str) -> None:
    for sink in SINKS:
        tally = masked_tally(sink, KINDS[kind])
        assert tally.rate >= MIN_MASKED, (
            f"{kind} in {sink}: {tally.masked}/{tally.total}\n" + "\n".join(tally.missed[:20])
        )


@pytest.mark.parametrize("category", sorted({item.category for item in LOOKALIKES}))
def test_no_category_of_lookalike_is_redacted(category: str) -> None:
    items = [item for item in LOOKALIKES if item.category == category]
    for sink in SINKS:
        assert false_redactions(sink, items).missed == ()


@pytest.mark.parametrize(
    "text",
    [
        "request id-ghp_{body} failed",
        "request_ghp_{body} failed",
        "(ghp_{body})",
        'key="ghp_{body}"',
        "token=ghp_{body};",
        "https://x.example.com/?t=ghp_{body}#frag",
    ],
)
def test_a_token_glued_to_a_word_or_punctuation_is_still_masked(text: str) -> None:
    body = "Fa4kE9bOdY0123456789abcdefABCDEF012345"
    out = redact_text(text.format(body=body))
    assert body[:12] not in out and body[-12:] not in out


@pytest.mark.parametrize(
    "text",
    [
        "Token: a small gift from the team",
        "Bearer instruments are not accepted at this branch.",
        "Secret: the meeting moved to Thursday",
        "The API key is rotated every 30 days.",
        "Forgot your password? Reset it from the login page.",
        "Basic usage: proctor eval run",
    ],
)
def test_prose_that_uses_secret_words_normally_is_left_alone(text: str) -> None:
    assert redact_text(text) == text
    assert redact({"note": text}) == {"note": text}


def test_a_password_line_is_masked_even_when_it_reads_like_words() -> None:
    # A passphrase may be plain words; for password names the value is masked regardless.
    assert redact_text("password: correct horse battery staple") == f"password: {REDACTED}"


def test_a_secret_is_masked_but_the_plain_words_of_its_url_path_are_kept() -> None:
    key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9x2Lm4Kp8Vt3Rs"
    out = redact_text(f"https://files.example.com/share/d/{key}/view")
    assert survives(key, out) is False
    assert out.startswith("https://files.example.com/share/d/[REDACTED")


def test_public_keys_and_certificates_are_not_secrets() -> None:
    pem = (
        "-----BEGIN CERTIFICATE-----\n"
        "MIIBszCCAVmgAwIBAgIUQ2Fr3pX9sT1vY0wK7LmZ4bN8cRgwCgYIKoZIzj0EAwIw\n"
        "Gz4Xq8Vt3Rs0Lm4Kp8Vt3Rs0Lm4Kp8Vt3Rs0Lm4Kp8Vt3Rs0Lm4Kp8Vt3Rs0Lm4\n"
        "-----END CERTIFICATE-----"
    )
    ssh = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOq9Xr2bT7vLm4Kp8Vt3Rs0Lm4Kp8Vt3Rs0Lm4Kp8V ada@host"
    assert redact_text(pem) == pem
    assert redact_text(ssh) == ssh


def test_a_bare_random_key_is_masked_but_the_same_length_of_hex_or_words_is_not() -> None:
    assert redact_text("wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9x2Lm4Kp") == "[REDACTED:high_entropy]"
    for kept in (
        "9fceb02d0ae598e95dc970b74767f19372d61af8",
        "HttpClientFactory2RetryPolicyV3HandlerBuilder",
        "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2",
        "VGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVyIHRoZSBsYXp5IGRvZw==",
    ):
        assert redact_text(kept) == kept


def test_redacting_any_corpus_text_twice_changes_nothing_more() -> None:
    for s in SECRETS:
        for _, text in texts(s):
            once = redact_text(text)
            assert redact_text(once) == once, (s.kind, text)
    for item in LOOKALIKES:
        assert redact_text(item.text) == item.text


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        (
            "https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&sp=r&sig=Zk9vQmFy%2BcXV4MTIz%3D",
            "Zk9vQmFy",
        ),
        (
            "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature="
            "5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592",
            "5d41402abc4b2a76",
        ),
    ],
)
def test_the_signature_of_a_presigned_or_sas_url_is_masked(url: str, secret: str) -> None:
    assert secret not in redact_text(url)
    assert secret not in json.dumps(redact({"link": url}))


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("HOME=/root\nSTRIPE_KEY=abc123secretvalue\nLANG=C", "abc123secretvalue"),
        ("run:\n--password hunter2secret", "hunter2secret"),
        ("log:\ntoken: abc123def456ghi789", "abc123def456ghi789"),
        ("out:\nsk-Fa4kE9bOdY0123456789abcdef", "Fa4kE9bOdY0123456789"),
        ("body=%7B%22k%22%3A%22AKIAFAKE0123456789AB%22%7D", "AKIAFAKE0123456789AB"),
    ],
)
def test_a_secret_after_an_escaped_line_break_or_percent_escape_is_masked(
    text: str, secret: str
) -> None:
    # An exception's repr and JSON text turn line breaks into the two characters `\n`.
    for shown in (text, repr(text), json.dumps(text), f"ToolError: {RuntimeError(text)!r}"):
        assert secret not in redact_text(shown), shown
