"""report.json written in pieces is byte-for-byte what json.dumps would write whole."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from harness.reports._json_stream import Lazy, indented, json_chunks

_LEAVES = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@given(_VALUES)
def test_chunks_join_to_what_json_dumps_writes(value: Any) -> None:
    expected = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)
    assert "".join(json_chunks(value)) == expected


def test_a_lazy_list_is_written_like_a_list_and_produced_only_when_written() -> None:
    produced: list[int] = []

    def items() -> Any:
        for n in range(3):
            produced.append(n)
            yield {"n": n, "text": "é<>"}

    lazy = {"b": Lazy(items), "a": Lazy(lambda: iter(())), "c": []}
    chunks = json_chunks(lazy)
    assert produced == []
    plain = {"b": [{"n": n, "text": "é<>"} for n in range(3)], "a": [], "c": []}
    assert "".join(chunks) == json.dumps(plain, sort_keys=True, indent=2, ensure_ascii=False)
    assert produced == [0, 1, 2]


@given(st.lists(_VALUES, max_size=4), st.integers(0, 3))
def test_a_lazy_lists_items_nested_at_any_depth_are_written_as_json_dumps_writes_them(
    items: list[Any], depth: int
) -> None:
    lazy: Any = Lazy(lambda: iter(items))
    plain: Any = items
    for n in range(depth):
        lazy, plain = {f"k{n}": lazy, "z": [1]}, {f"k{n}": plain, "z": [1]}
    expected = json.dumps(plain, sort_keys=True, indent=2, ensure_ascii=False)
    assert "".join(json_chunks(lazy)) == expected


class _Label(str):
    """A str subclass: json writes it as a string; the fast path must not guess."""


# Everything json.dumps accepts and writes its own way: tuples as lists, non-string keys
# converted, NaN and infinities, subclasses of str and int, surrogates and control characters.
_ODD_LEAVES = (
    _LEAVES
    | st.floats()
    | st.text(alphabet=st.characters(codec=None, categories=None)).map(_Label)
    | st.integers(-3, 3).map(lambda n: n == 0)
    | st.just("\ud800 \x00 \x1f \u2028")
)
_ODD_KEYS = st.text() | st.integers() | st.floats(allow_nan=False) | st.booleans() | st.none()
_ODD_VALUES = st.recursive(
    _ODD_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(st.text(), inner, max_size=4)
        | st.dictionaries(_ODD_KEYS, inner, max_size=3)
    ),
    max_leaves=30,
)


@given(_ODD_VALUES, st.integers(0, 3))
def test_an_item_is_written_exactly_as_json_dumps_writes_it_at_its_depth(
    value: Any, level: int
) -> None:
    try:
        expected = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)
    except TypeError:  # keys json cannot sort (a str beside an int): refused either way
        try:
            indented(value, level)
        except TypeError:
            return
        raise AssertionError("json refused this value; indented wrote it") from None
    assert indented(value, level) == expected.replace("\n", "\n" + "  " * level)
