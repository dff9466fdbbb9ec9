"""A surrogate code point anywhere in a string or key is refused, found by the UTF-8 codec."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governance.arguments._snapshot import ArgumentRefused, _has_surrogate, snapshot_arguments

TEXT = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010),
    ),
    max_size=30,
)


@settings(max_examples=2000, deadline=None)
@given(text=TEXT)
def test_the_codec_check_agrees_with_a_check_of_every_character(text: str) -> None:
    assert _has_surrogate(text) == any("\ud800" <= ch <= "\udfff" for ch in text)


@pytest.mark.parametrize("bad", ["\ud800", "x" * 10_000 + "\udfff", "é\udc80é", "\ud83d\ude00"])
def test_a_surrogate_in_a_value_or_a_key_is_refused(bad: str) -> None:
    with pytest.raises(ArgumentRefused):
        snapshot_arguments({"a": [bad]})
    with pytest.raises(ArgumentRefused):
        snapshot_arguments({bad: 1})


def test_text_without_a_surrogate_is_kept_as_it_is() -> None:
    text = "plain, é, 😀, \U0010ffff"
    assert snapshot_arguments({text: text}) == {text: text}
