"""The one reading of a path: every spelling has one canonical form or is refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from governance.arguments._paths import PathRefused, canonical_or_none, canonical_path, is_canonical


@pytest.mark.parametrize(
    ("path", "canonical"),
    [
        ("reports/a.txt", "reports/a.txt"),
        ("reports//a.txt", "reports/a.txt"),
        ("./reports/./a.txt", "reports/a.txt"),
        ("reports/../secrets.txt", "secrets.txt"),
        ("reports/./a/../../x", "x"),
        ("reports/", "reports"),
        (".", "."),
        ("./", "."),
        ("cafe\u0301/menu", "caf\u00e9/menu"),  # NFD spelled, NFC judged and executed
        ("~/x", "~/x"),  # a tilde is an ordinary character: nothing expands it
    ],
)
def test_paths_have_one_canonical_form(path: str, canonical: str) -> None:
    assert canonical_path(path) == canonical


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("..", "path_escapes_root"),
        ("../reports/a", "path_escapes_root"),
        ("reports/../../x", "path_escapes_root"),
        ("/etc/passwd", "absolute_path"),
        ("//server/share", "absolute_path"),
        ("C:/Windows", "absolute_path"),
        ("c:relative", "absolute_path"),
        ("", "empty_path"),
        ("reports\\..\\x", "backslash_in_path"),
        ("secrets/a\\../../api_keys.txt", "backslash_in_path"),
        ("\\\\server\\share", "backslash_in_path"),
        ("reports/a\x00.txt", "control_character"),
        ("reports/a\n.txt", "control_character"),
        ("reports/\x7f", "control_character"),
        ("secrets\u200b/key", "invisible_character"),
        ("reports/\u202egnp.exe", "invisible_character"),
        ("reports/\ud800", "invalid_unicode"),
        ("a" * 5000, "path_too_long"),
    ],
)
def test_ambiguous_or_escaping_paths_are_refused_with_a_reason(path: str, reason: str) -> None:
    with pytest.raises(PathRefused) as refused:
        canonical_path(path)
    assert refused.value.reason == reason
    assert canonical_or_none(path) is None


@pytest.mark.parametrize("value", [None, 5, ["reports/a"], {"p": "reports/a"}, b"reports/a"])
def test_a_non_string_path_has_no_canonical_form(value: object) -> None:
    assert canonical_or_none(value) is None
    assert not is_canonical(value)


_PATHISH = st.lists(
    st.sampled_from(
        [
            "a",
            "b",
            "secrets",
            "reports",
            "/",
            "\\",
            ".",
            "..",
            "\x00",
            "é",
            "e\u0301",
            "\u200b",
            "C:",
            "~",
            " ",
        ]
    ),
    max_size=12,
).map("".join)


@given(st.one_of(st.text(max_size=40), _PATHISH))
def test_canonical_form_is_a_fixed_point_with_no_dot_dot_or_backslash(value: str) -> None:
    canonical = canonical_or_none(value)
    if canonical is None:
        return
    assert canonical_path(canonical) == canonical
    assert is_canonical(canonical)
    parts = canonical.split("/")
    assert ".." not in parts and "" not in parts
    assert "\\" not in canonical and not canonical.startswith("/")
    assert canonical == "." or "." not in parts


_ASCII_PATHISH = st.lists(
    st.sampled_from(
        [
            "a",
            "b.txt",
            "/",
            "//",
            ".",
            "..",
            "...",
            ".a",
            "\\",
            ":",
            "C:",
            "z:",
            " ",
            "\x00",
            "\x1f",
            "\x7f",
            "\n",
            "\t",
            "~",
            "*",
            "é",
            "\u200b",
        ]
    ),
    max_size=14,
).map("".join)


@given(st.one_of(_ASCII_PATHISH, _PATHISH, st.text(max_size=30)))
def test_the_fast_canonical_check_agrees_with_the_full_reading(value: str) -> None:
    assert is_canonical(value) is (canonical_or_none(value) == value)


@pytest.mark.parametrize(
    ("value", "canonical"),
    [
        ("reports/a.txt", True),
        (".", True),
        ("...", True),
        (".hidden/..x", True),
        ("a" * 4096, True),
        ("a" * 4097, False),
        ("a/", False),
        ("a//b", False),
        ("./a", False),
        ("a/./b", False),
        ("a/..", False),
        ("..", False),
        ("../a", False),
        ("/a", False),
        ("C:/a", False),
        ("c:", False),
        ("a\\b", False),
        ("a\nb", False),
        ("a\n", False),
        ("a\x7f", False),
        ("", False),
    ],
)
def test_ascii_paths_are_canonical_only_in_their_one_spelling(value: str, canonical: bool) -> None:
    assert is_canonical(value) is canonical
    assert (canonical_or_none(value) == value) is canonical


class _Path(str):
    """A str subclass: judged by the full reading, never the fast one."""


def test_a_str_subclass_is_judged_like_the_plain_string() -> None:
    assert is_canonical(_Path("reports/a")) is True
    assert is_canonical(_Path("reports/../a")) is False
