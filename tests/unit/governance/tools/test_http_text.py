"""`http.get`'s HTML-to-text pass: one forward scan, bounded work on adversarial markup."""

from __future__ import annotations

import pytest

from governance.tools._http_text import Scan, html_text

_N = 512 * 1024  # the default byte cap: the largest page the pass is ever handed

# Pages that made html.parser super-linear (or raise), each with the text it leaves.
ADVERSARIAL = [
    ("<a " * (_N // 3), ""),
    ("</" * (_N // 2), ""),
    ("<?" * (_N // 2), ""),
    ("<!" * (_N // 2), ""),
    ("<![" * (_N // 3), ""),
    ("&#" * (_N // 2), "&#" * (_N // 2)),
    ("<" * _N, "<" * _N),
    ("<!--" + "a" * _N, ""),
    ("<script>" + "</" * (_N // 2), ""),
    ('<a b="' * (_N // 6), ""),
    ("<a b=" + "= " * (_N // 2), ""),
    ("x<a " * (_N // 4), "x"),
]


@pytest.mark.parametrize(("page", "text"), ADVERSARIAL, ids=lambda v: repr(v)[:12])
def test_adversarial_markup_is_read_in_a_bounded_number_of_steps(page: str, text: str) -> None:
    scan = Scan(page)
    assert html_text(page) == text
    scan.run()
    assert scan.examined <= 2 * len(page)


def test_markup_the_standard_parser_raised_on_is_read() -> None:
    assert html_text("<![<![ x <p>kept</p>") == "kept"  # a declaration runs to the first `>`
    assert html_text("<![if x]>a<![endif]><p>b</p>") == "a\nb"


@pytest.mark.parametrize(
    ("page", "text"),
    [
        ("<a title=\"x>y\" b='q>'>link</a>", "link"),
        ("a &lt; b &amp; c <3", "a < b & c <3"),
        ('<script>if (a<b) x = "</scr";</SCRIPT >after', "after"),
        ("<style>p>q{}</style><noscript><p>no</p></noscript>ok", "ok"),
        ("<![CDATA[x]]>y<?php z ?>w</>v<!-- c -->u", "ywvu"),
        ("<div>one</div><div>two<br/>three</div>", "one\ntwo\nthree"),
        ("<p>open <b>tag", "open tag"),
        ("<p>unterminated <a href='x", "unterminated"),
    ],
)
def test_text_is_kept_and_markup_dropped(page: str, text: str) -> None:
    assert html_text(page) == text
