"""The signed session cookie: only this console's token makes one, and it ends."""

from __future__ import annotations

import pytest

from harness.console._session import (
    MAX_AGE_SECONDS,
    OperatorNameError,
    SessionCodec,
    check_operator,
)

NOW = 1_800_000_000


def test_a_cookie_reads_back_as_the_operator_and_csrf_it_was_issued_with() -> None:
    codec = SessionCodec("token-aaaaaaaaaaaaaaaa")
    session, cookie = codec.issue("ann", NOW)
    assert codec.read(cookie, NOW + 60) == session
    assert session.operator == "ann" and len(session.csrf) >= 32


def test_each_sign_in_gets_its_own_csrf_value() -> None:
    codec = SessionCodec("token-aaaaaaaaaaaaaaaa")
    assert codec.issue("ann", NOW)[0].csrf != codec.issue("ann", NOW)[0].csrf


def test_a_cookie_made_with_another_token_is_worthless() -> None:
    _, cookie = SessionCodec("token-aaaaaaaaaaaaaaaa").issue("ann", NOW)
    assert SessionCodec("token-bbbbbbbbbbbbbbbb").read(cookie, NOW) is None


@pytest.mark.parametrize(
    "tamper",
    [
        lambda c: c.replace(c[2], "A" if c[2] != "A" else "B", 1),  # body changed
        lambda c: c[:-2] + ("AA" if not c.endswith("AA") else "BB"),  # mac changed
        lambda c: c.split(".")[0],  # mac dropped
        lambda c: c + ".x",
        lambda c: "",
        lambda c: "%%%.%%%",
    ],
)
def test_a_tampered_cookie_is_refused(tamper) -> None:  # type: ignore[no-untyped-def]
    codec = SessionCodec("token-aaaaaaaaaaaaaaaa")
    _, cookie = codec.issue("ann", NOW)
    assert codec.read(tamper(cookie), NOW) is None


def test_a_session_ends_after_its_max_age_and_cannot_come_from_the_future() -> None:
    codec = SessionCodec("token-aaaaaaaaaaaaaaaa")
    _, cookie = codec.issue("ann", NOW)
    assert codec.read(cookie, NOW + MAX_AGE_SECONDS) is not None
    assert codec.read(cookie, NOW + MAX_AGE_SECONDS + 1) is None
    assert codec.read(cookie, NOW - 1) is None


@pytest.mark.parametrize(
    "name",
    ["", " ", "<script>alert(1)</script>", 'a"b', "a b", "-ann", "x" * 65, "an\nn", "änn"],
)
def test_operator_names_that_could_confuse_a_record_are_refused(name: str) -> None:
    with pytest.raises(OperatorNameError):
        check_operator(name)


def test_an_operator_name_is_stripped_of_surrounding_space() -> None:
    assert check_operator("  bob@example.com ") == "bob@example.com"
