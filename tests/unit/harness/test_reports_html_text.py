"""Report text reaches HTML escaped, control characters shown: the fast path for text with
nothing to change gives exactly what the full escape gives."""

from __future__ import annotations

from html import escape

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.reports._common import clean_block, html_text

_TRICKY = "&<>\"'\r\n\t\x00\x1b\x7f\x85\u2028\u202e\u2066\ud800 aZ9é"


@given(st.text(alphabet=st.sampled_from(_TRICKY) | st.characters(), max_size=40))
def test_html_text_is_the_full_escape_of_any_text(text: str) -> None:
    assert html_text(text) == escape(clean_block(text), quote=True)


@pytest.mark.parametrize("special", list(_TRICKY))
def test_html_text_changes_each_special_character_alone_as_the_full_escape_does(
    special: str,
) -> None:
    text = f"plain {special} text"
    assert html_text(text) == escape(clean_block(text), quote=True)


def test_html_text_leaves_no_markup_or_control_character() -> None:
    shown = html_text("<b onclick='x'>&\"\x1b[31m\u202e\r\n")
    assert not any(ch in shown for ch in "<>\"'\x1b\u202e\r")
