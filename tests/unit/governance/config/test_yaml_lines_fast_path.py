"""The libyaml fast paths of the line-tracking YAML loader agree exactly with the pure-Python one.

Differential: generated documents (valid ones dumped in every style, then mutated token by
token; and token soups) go through both loaders. Wherever the fast path returns a result, it is
the pure-Python loader's result, with the same value types and the same line of every key and
item; and the public loader's outcome (value, or error line and message) is always the
pure-Python one's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from governance.config import _yaml_lines
from governance.config._text import MAX_DEPTH, check_text
from governance.config._yaml_lines import (
    _load_events,
    _load_fast,
    _load_slow,
    load_yaml_with_lines,
)
from governance.core._errors import ConfigError

REPO = Path(__file__).resolve().parents[4]

needs_libyaml = pytest.mark.skipif(
    not yaml.__with_libyaml__, reason="PyYAML was built without libyaml"
)


def _error(path: str, line: int | None, message: str) -> ConfigError:
    return ConfigError(path, line, message)


def _typed(value: Any) -> Any:
    """The value with every scalar's exact type beside it: 1 == True == 1.0 in Python."""
    if isinstance(value, dict):
        return ("map", [(k, _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("seq", [_typed(v) for v in value])
    return (type(value).__name__, repr(value))


def _outcome(load: Any, text: str) -> tuple[Any, ...]:
    try:
        data, lines = load(text, "doc.yaml", _error, subject="file")
    except ConfigError as exc:
        return ("error", exc.line, exc.message)
    return ("ok", _typed(data), sorted(lines.items(), key=repr))


def _slow(text: str, path: str, factory: Any, *, subject: str) -> Any:
    return _load_slow(text, path, factory, subject)


# Plain scalars whose YAML 1.1 type is easy to get wrong, and structural oddities.
# fmt: off
TRICKY = [
    "yes", "No", "on", "OFF", "y", "n", "~", "null", "Null", "NULL", "true", "True", "FALSE",
    "0", "-0", "+1", "017", "0o17", "0x1F", "0b101", "1_000", "1:20", "190:20:30.15", "1e3",
    "1.0e+3", "-.5", ".5", ".inf", "-.Inf", ".NaN", "2026-12-01", "2026-12-01T10:00:00Z",
    "2026-12-01 10:00:00.5 +01:00", "=", "<<", "a b", "é", "😀", "'q'", '"\\ud83d\\ude00"',
    '"\\ud83d"', '"\\x85"', '"\\t"', "|\n  block\n", ">-\n  folded\n  text\n", "[]", "{}",
    "[a, {b: c}]", "{a: [1, 2]}", "&x 1", "*x", "!!str 1", "!!int '3'", "!!binary aGk=",
    "!!timestamp 2026-12-01", "!local x", "!!python/none ''", "? a", "a: b", "- a",
]
TOKENS = [
    "a", "b", "1", " ", "  ", "\n", "\n  ", "\t", ":", ": ", "- ", "-", "[", "]", "{", "}",
    ", ", "'", '"', "#", " # c\n", "&x ", "*x", "!", "!!str ", "? ", "|", ">", "\\", "%",
    "@", "`", "~", ".", "\r\n", "\r", "\x85", "\u2028", "é", "0x", "e", "+", "---", "...",
    "<<: ", "a: a", "a: 1", "key", "yes", "2026-12-01",
]
# fmt: on

scalars = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.sampled_from(TRICKY),
)
trees = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=6), st.sampled_from(TRICKY)), inner, max_size=4),
    ),
    max_leaves=16,
)


@st.composite
def dumped_documents(draw: st.DrawFn) -> str:
    """A valid document in one of YAML's styles, then up to three tokens put in or taken out."""
    text = yaml.safe_dump(
        draw(trees),
        default_flow_style=draw(st.sampled_from([False, True, None])),
        allow_unicode=draw(st.booleans()),
        width=draw(st.sampled_from([20, 80, 10_000])),
        indent=draw(st.sampled_from([2, 4])),
        default_style=draw(st.sampled_from([None, "'", '"'])),
        sort_keys=False,
    )
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text = text[:at] + draw(st.sampled_from(TOKENS + TRICKY)) + text[at:]
        else:
            text = text[:at] + text[at + draw(st.integers(1, 3)) :]
    return text


token_soups = st.lists(st.sampled_from(TOKENS + TRICKY), max_size=30).map("".join)
documents = st.one_of(dumped_documents(), token_soups)

FUZZ = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@needs_libyaml
@FUZZ
@given(documents)
@example("a:\tb")  # libyaml takes a tab after the colon; PyYAML refuses it
@example("a: 1\na: 2")
@example("a: &x 1\nb: &x 2\nc: *x")
@example("k: 2026-12-01\nv: 1:20\nw: 0o17\nx: 017\ny: On\nz: ~\n")
def test_whatever_the_fast_path_returns_is_exactly_what_the_pure_python_loader_returns(
    text: str,
) -> None:
    try:
        fast = _load_fast(text, "doc.yaml", _error, "file")
    except Exception as exc:  # noqa: BLE001 - the property: the fast path never raises
        pytest.fail(f"the fast path raised {exc!r} instead of falling back")
    if fast is not None:
        data, lines = fast
        got = ("ok", _typed(data), sorted(lines.items(), key=repr))
        assert got == _outcome(_slow, text)


@FUZZ
@given(documents)
@example("|#")  # libyaml takes `#` after a block scalar's header as a comment; PyYAML refuses it
@example("a: >+2#c\n  b\n")
def test_the_loader_always_gives_the_pure_python_loaders_value_or_error(text: str) -> None:
    try:
        check_text(text, "doc.yaml", _error, subject="file")
    except ConfigError:
        return  # refused before either parser sees it
    assert _outcome(load_yaml_with_lines, text) == _outcome(_slow, text)


@needs_libyaml
def test_a_shipped_scenario_file_goes_the_fast_way_with_its_lines() -> None:
    path = REPO / "scenarios" / "reads.yaml"
    text = path.read_text(encoding="utf-8")
    fast = _load_fast(text, str(path), _error, "scenario file")
    assert fast is not None
    assert fast[1] == _load_slow(text, str(path), _error, "scenario file")[1]
    assert ("scenarios", 0, "id") in fast[1]


@needs_libyaml
@pytest.mark.parametrize(("opener", "closer"), [("[", "]"), ("- ", ""), ("{a: ", "}")])
def test_nesting_past_the_limit_never_reaches_the_c_composer(opener: str, closer: str) -> None:
    def nested(depth: int) -> str:
        return opener * depth + "x" + closer * depth

    assert _yaml_lines._nesting_within_limit(nested(MAX_DEPTH))
    assert not _yaml_lines._nesting_within_limit(nested(MAX_DEPTH + 1))
    assert _load_fast(nested(MAX_DEPTH + 1), "deep.yaml", _error, "file") is None
    with pytest.raises(ConfigError, match=f"more than {MAX_DEPTH} levels deep"):
        load_yaml_with_lines(nested(MAX_DEPTH + 1), "deep.yaml", _error)


@pytest.mark.parametrize(
    ("text", "kind"),
    [("b: !!bool false'\n", "bool"), ("a: !!int ''\n", "int"), ("a: !!float x\n", "float")],
)
def test_an_explicit_tag_on_a_value_it_cannot_read_is_a_config_error_at_its_line(
    text: str, kind: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_yaml_with_lines("ok: 1\n" + text, "doc.yaml", _error)
    assert caught.value.line == 2
    assert f"cannot be read as {kind}" in caught.value.message


def test_an_escape_past_the_last_code_point_is_a_config_error_at_its_line() -> None:
    with pytest.raises(ConfigError) as caught:
        load_yaml_with_lines('ok: 1\n"\\Ua0010000": x\n', "doc.yaml", _error)
    assert caught.value.line == 2
    assert caught.value.message.startswith("invalid YAML: ")


@needs_libyaml
def test_a_document_a_million_levels_deep_is_refused_with_its_line_not_a_crash() -> None:
    # In a child: were the C composer reached, the interpreter could die of a stack overflow.
    probe = (
        "from governance.config._yaml_lines import load_yaml_with_lines\n"
        "from governance.core._errors import ConfigError\n"
        "text = '[' * 1_000_000\n"
        "try:\n"
        "    load_yaml_with_lines(text, 'deep.yaml', ConfigError)\n"
        "except ConfigError as exc:\n"
        "    print(exc.line, exc.message)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("1 ")
    assert f"more than {MAX_DEPTH} levels deep" in done.stdout


def test_without_libyaml_the_pure_python_loader_still_loads_and_locates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_yaml_lines, "_FastLoader", None)
    data, lines = load_yaml_with_lines("a:\n  - 1\n  - x: yes\n", "doc.yaml", _error)
    assert data == {"a": [1, {"x": True}]}
    assert lines == {("a",): 1, ("a", 0): 2, ("a", 1): 3, ("a", 1, "x"): 3}
    with pytest.raises(ConfigError) as caught:
        load_yaml_with_lines("a: 1\nb: 2\na: 3\n", "doc.yaml", _error)
    assert caught.value.line == 3


# -- the event walk: plain documents built straight from libyaml's events -------------------


@needs_libyaml
@FUZZ
@given(documents)
@example("a: 1\na: 2")
@example("k: 2026-12-01\nv: 1:20\nw: 0o17\nx: 017\ny: On\nz: ~\nq: [a, {b: null}]\n")
@example("- é\n- '\\ud83d'\n- \"\\ud83d\\ude00\"\n")
def test_whatever_the_event_walk_returns_is_exactly_what_the_pure_python_loader_returns(
    text: str,
) -> None:
    if _yaml_lines._libyaml_differs(text):
        return  # never offered to libyaml
    walked = _load_events(text)
    if walked is not None:
        data, lines = walked
        assert ("ok", _typed(data), sorted(lines.items(), key=repr)) == _outcome(_slow, text)


@needs_libyaml
def test_every_shipped_scenario_and_policy_file_is_walked_from_events_with_its_lines() -> None:
    files = sorted((REPO / "scenarios").rglob("*.yaml"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        walked = _load_events(text)
        assert walked is not None, path
        assert walked == _load_slow(text, str(path), _error, "file"), path


@needs_libyaml
@pytest.mark.parametrize(
    "text",
    [
        "a: &x 1\nb: *x\n",  # anchors and aliases: the composing path counts their expansions
        "a: !!str 1\n",  # explicit tags
        "a: 1\na: 2\n",  # a duplicate key: refused, at its line
        "<<: {a: 1}\n",  # a merge key: refused
        "? [a]\n: b\n",  # a key that is not a string
        "yes: 1\n",  # a key read as a boolean
        "a: .nan\n",  # a non-finite number
        "a: 1\n---\nb: 2\n",  # a second document
        "[a?b]\n",  # read differently by libyaml and PyYAML
        "a: [\n",  # not YAML at all
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),  # past the depth limit
    ],
)
def test_anything_outside_the_plain_subset_is_handed_on_not_loaded(text: str) -> None:
    assert _load_events(text) is None


def test_a_refused_document_still_gets_the_pure_python_loaders_error_and_line() -> None:
    text = "a: 1\nb:\n  c: 2\n  c: 3\n"
    with pytest.raises(ConfigError) as caught:
        load_yaml_with_lines(text, "doc.yaml", _error)
    assert caught.value.line == 4
    assert "duplicate key 'c' in b (first on line 3)" in caught.value.message


@needs_libyaml
def test_the_event_walk_counts_nodes_like_the_composing_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_yaml_lines, "MAX_NODES", 4)
    assert _load_events("a: [1, 2]\n") is not None  # the root, the list, two items: 4 nodes
    assert _load_events("a: [1, 2, 3]\n") is None
    with pytest.raises(ConfigError, match="more than 4 YAML nodes"):
        load_yaml_with_lines("a: [1, 2, 3]\n", "doc.yaml", _error)


@FUZZ
@given(documents)
@example("a !b")
@example("é!\n")
@example("_!x")
@example("x\n!y")
@example("a: |-#\n")
def test_the_scan_for_what_libyaml_reads_differently_finds_what_the_pattern_finds(
    text: str,
) -> None:
    assert _yaml_lines._libyaml_differs(text) == bool(_yaml_lines._LIBYAML_DIFFERS.search(text))


@pytest.mark.parametrize(
    "text",
    [
        "tool: shell\neffect: block\nwhen:\n\ufeff  negate: true\n",
        "a:\n\ufeff  b: 1",
        "a: [x,\n\ufeffy]",
        "a: 1\n\ufeff\nb: 2",
        "- a,b\n\ufeff",
    ],
)
def test_a_byte_order_mark_past_the_start_is_read_as_pyyaml_reads_it(text: str) -> None:
    # libyaml skips a U+FEFF anywhere; PyYAML takes one past the start as text, so the nesting
    # of a policy would hinge on an invisible character and on whether libyaml is installed.
    assert _outcome(load_yaml_with_lines, text) == _outcome(_slow, text)
