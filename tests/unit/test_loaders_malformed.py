"""Each kind of malformed file, for each loader: the loader's own error, the file, the line, a fix.

Before these checks a control character raised yaml.reader.ReaderError, deep nesting
RecursionError, a 5,000-digit number ValueError, and a rejected baseline named no line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from governance import ConfigError, PolicyError
from governance.config._text import MAX_BYTES, MAX_DEPTH
from governance.mcp._config import McpConfigError, load_mcp_config
from governance.mcp._pins import McpLockError, load_pins
from governance.policy._load import PolicyFile, load_policy, parse_policy
from harness._baseline import load_baseline, load_baseline_traces
from harness._errors import BaselineError, ScenarioError
from harness._scenario_load import load_scenarios
from harness.cli._ask import _load_script

ROOT = Path(__file__).resolve().parents[2]
POLICY = (ROOT / "governance/data/default_policy.yaml").read_bytes()


def _scenarios(path: Path) -> object:
    return load_scenarios([path])


YAML_LOADERS: dict[str, tuple[Callable[[Path], Any], type[ConfigError], str]] = {
    "policy": (load_policy, PolicyError, "policy.yaml"),
    "mcp-config": (load_mcp_config, McpConfigError, "servers.yaml"),
    "scenario": (_scenarios, ScenarioError, "case.yaml"),
    "replay-script": (_load_script, ConfigError, "script.yaml"),
}
JSON_LOADERS: dict[str, tuple[Callable[[Path], Any], type[ConfigError], str]] = {
    "baseline": (load_baseline, BaselineError, "baseline.json"),
    "pins": (load_pins, McpLockError, "servers.lock.json"),
    "stored-trace": (lambda path: load_baseline_traces(path.parent), BaselineError, "t.json"),
}


def _laughs() -> bytes:
    rows = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    rows += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 7)]
    return ("\n".join(rows) + "\n").encode()


def _alias_tower() -> bytes:
    """Each anchor nests the previous one 20 levels down: 4 x 20 levels from 20-deep text."""
    rows = ["t0: &t0 x"]
    rows += [f"t{i}: &t{i} {'[' * 20}*t{i - 1}{']' * 20}" for i in range(1, 5)]
    return ("\n".join(rows) + "\n").encode()


YAML_CASES: list[tuple[str, bytes, int, str]] = [
    ("invalid-utf8", b"version: 1\nnote: caf\xe9\n", 2, "save it as UTF-8"),
    ("utf16", "version: 1\n".encode("utf-16"), 1, "UTF-16 text; save it as UTF-8"),
    ("utf32", "version: 1\n".encode("utf-32"), 1, "UTF-32 text; save it as UTF-8"),
    ("control", b"version: 1\nnote: a\x07b\n", 2, "U+0007"),
    ("escape-char", b"version: 1\nnote: a\x1bb\n", 2, "U+001B"),
    ("nul", b"version: 1\n\x00\n", 2, "NUL byte"),
    ("c1-control", "version: 1\nnote: a\x9fb\n".encode(), 2, "U+009F"),
    ("encoded-surrogate", b"version: 1\nnote: \xed\xa0\x80\n", 2, "not UTF-8"),
    ("surrogate-escape", b'version: 1\nnote: "\\ud800"\n', 2, "U+D800"),
    ("surrogate-key", b'version: 1\n"\\udc00": 1\n', 2, "U+DC00"),
    ("deep-flow", b"version: 1\nnote: " + b"[" * 3000 + b"]" * 3000 + b"\n", 2, "flatten it"),
    ("deep-map", b"version: 1\nnote: " + b"{a: " * 3000 + b"1" + b"}" * 3000, 2, "flatten it"),
    (
        "deep-block",
        b"version: 1\nnote:\n" + b"".join(b"  " * i + b"- \n" for i in range(1, 200)),
        2 + MAX_DEPTH,
        "flatten it",
    ),
    ("alias-tower", _alias_tower(), 5, "flatten it"),
    ("billion-laughs", _laughs(), 5, "without aliases"),
    ("self-alias", b"version: 1\nnote: &a [*a]\n", 2, "refers to itself"),
    ("duplicate-key", b"version: 1\nnote: a\nnote: b\n", 3, "first on line 2"),
    ("non-string-key", b"version: 1\n7: a\n", 2, "quote it"),
    ("complex-key", b"version: 1\n? [a, b]\n: c\n", 2, "plain string"),
    ("python-tag", b"version: 1\nnote: !!python/object:os.system {}\n", 2, "remove it"),
    ("python-name", b"version: 1\nnote: !!python/name:os.system\n", 2, "remove it"),
    ("binary-tag", b"version: 1\nnote: !!binary AAAA\n", 2, "remove it"),
    ("custom-tag", b"version: 1\nnote: !vault secret\n", 2, "remove it"),
    ("bad-int-tag", b"version: 1\nnote: !!int abc\n", 2, "cannot be read"),
    ("huge-int", b"version: 1\nnote: " + b"9" * 5000 + b"\n", 2, "shorten it"),
    ("infinity", b"version: 1\nnote: .inf\n", 2, "not a finite number"),
    ("nan", b"version: 1\nnote: .NaN\n", 2, "not a finite number"),
    ("merge-key", b"version: 1\nbase: &b {x: 1}\nnote:\n  <<: *b\n", 4, "write the keys out"),
    ("two-documents", b"version: 1\n---\nversion: 1\n", 2, "invalid YAML"),
    ("syntax", b"version: 1\nnote: [a, b\n", 2, "invalid YAML"),
    ("empty", b"", 1, "empty"),
    ("comments-only", b"# nothing here\n", 1, "empty"),
    ("top-level-string", b"just text\n", 1, "mapping|list"),
    ("too-large", b"version: 1\n" + b"# padding\n" * (MAX_BYTES // 10), 419431, "limit"),
]


def _expect(
    loader: tuple[Callable[[Path], Any], type[ConfigError], str],
    tmp_path: Path,
    raw: bytes,
    line: int,
) -> ConfigError:
    load, error_type, name = loader
    path = tmp_path / name
    path.write_bytes(raw)
    with pytest.raises(error_type) as caught:
        load(path)
    assert type(caught.value) is error_type
    assert str(caught.value).startswith(f"{path}:{line}: "), str(caught.value)
    return caught.value


@pytest.mark.parametrize("loader", sorted(YAML_LOADERS))
@pytest.mark.parametrize(
    ("raw", "line", "fix"), [c[1:] for c in YAML_CASES], ids=[c[0] for c in YAML_CASES]
)
def test_a_malformed_yaml_file_is_refused_with_file_line_and_fix(
    tmp_path: Path, loader: str, raw: bytes, line: int, fix: str
) -> None:
    error = _expect(YAML_LOADERS[loader], tmp_path, raw, line)
    assert any(part in str(error) for part in fix.split("|")), str(error)


def test_the_character_a_file_may_not_hold_is_named_by_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_bytes(b"version: 1\nrules:\n  - id: r\x01\n")
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert (caught.value.line, caught.value.column) == (3, 10)
    assert "column 10" in str(caught.value)


def test_a_utf8_bom_is_dropped_and_the_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + POLICY)
    assert load_policy(path).rules


def test_a_surrogate_pair_written_as_two_escapes_is_one_character() -> None:
    policy = parse_policy(
        'version: 1\nrules:\n  - id: r\n    description: "\\ud83d\\ude00"\n    effect: allow\n'
        "    match: {tool: fs.read}\n"
    )
    assert policy.rules[0].description == "\U0001f600"


def test_an_unquoted_date_is_kept_as_the_text_written(tmp_path: Path) -> None:
    path = tmp_path / "script.yaml"
    path.write_bytes(b"- answer: 2024-01-31\n")
    assert _load_script(path) == [{"answer": "2024-01-31"}]


@pytest.mark.parametrize(("extra", "loads"), [(0, True), (1, False)])
def test_nesting_up_to_the_limit_loads_and_one_more_level_is_refused(
    tmp_path: Path, extra: int, loads: bool
) -> None:
    path = tmp_path / "script.yaml"
    depth = MAX_DEPTH - 4 + extra  # under the list, a turn, `calls` and a call
    args = "{a: " * depth + "1" + "}" * depth
    path.write_bytes(f"- calls:\n  - tool: fs.read\n    args: {args}\n".encode())
    if loads:
        assert _load_script(path)
    else:
        with pytest.raises(ConfigError, match=rf"^{path}:3: .*more than {MAX_DEPTH} levels"):
            _load_script(path)


@pytest.mark.parametrize(("extra", "loads"), [(0, True), (1, False)])
def test_json_nesting_up_to_the_limit_loads_and_one_more_level_is_refused(
    tmp_path: Path, extra: int, loads: bool
) -> None:
    depth = MAX_DEPTH - 1 + extra  # under the trace object
    nested = '{"a": ' * depth + "1" + "}" * depth
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "s.json").write_text(f'{{"scenario_id": "s",\n"x": {nested}}}')
    if loads:
        assert load_baseline_traces(traces)
    else:
        with pytest.raises(BaselineError, match=r"s\.json:2: .*levels deep"):
            load_baseline_traces(traces)


@pytest.mark.parametrize("text", ["\x00", "\x07", "[" * 3000 + "]" * 3000, "{a: " * 3000])
def test_a_hot_reloaded_policy_turning_bad_raises_policy_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_bytes(POLICY)
    policy = PolicyFile(path)
    bad = POLICY + b"\nextra: " + text.encode() + b"\n"
    path.write_bytes(bad)
    os.utime(path, ns=(1, 1))
    with pytest.raises(PolicyError) as caught:
        policy.current()
    assert str(caught.value).startswith(f"{path}:")
    assert caught.value.line is not None


# -- JSON -------------------------------------------------------------------------------------

JSON_CASES: list[tuple[str, bytes, int, str]] = [
    ("invalid-utf8", b'{\n"a": "caf\xe9"}', 2, "save it as UTF-8"),
    ("utf16", '{"a": 1}'.encode("utf-16"), 1, "UTF-16 text"),
    ("control", b'{\n"a": "x\x07"}', 2, "U+0007"),
    ("nul", b'{\n"a": 1}\x00', 2, "NUL byte"),
    ("surrogate-escape", b'{\n"a": "\\ud800"}', 2, "U+D800"),
    ("surrogate-key", b'{\n"\\udfff": 1}', 2, "U+DFFF"),
    ("deep", b'{\n"a": ' + b"[" * 3000 + b"]" * 3000 + b"}", 2, "flatten it"),
    ("duplicate-key", b'{\n"a": 1,\n"a": 2}', 3, "first on line 2"),
    ("nan", b'{\n"a": NaN}', 2, "not a finite number"),
    ("infinity", b'{\n"a": -Infinity}', 2, "not a finite number"),
    ("overflowing-float", b'{\n"a": 1e999}', 2, "too large"),
    ("huge-int", b'{\n"a": ' + b"9" * 5000 + b"}", 2, "shorten it"),
    ("syntax", b'{\n"a": 1,\n}', 3, "not valid JSON"),
    ("truncated", b'{\n"a": [1,\n', 3, "not valid JSON"),
    ("empty", b"", 1, "empty"),
    ("top-level-list", b"[1, 2]", 1, "JSON object"),
    ("too-large", b'{"a": "' + b"x" * MAX_BYTES + b'"}', 1, "limit"),
]


@pytest.mark.parametrize("loader", sorted(JSON_LOADERS))
@pytest.mark.parametrize(
    ("raw", "line", "fix"), [c[1:] for c in JSON_CASES], ids=[c[0] for c in JSON_CASES]
)
def test_a_malformed_json_file_is_refused_with_file_line_and_fix(
    tmp_path: Path, loader: str, raw: bytes, line: int, fix: str
) -> None:
    error = _expect(JSON_LOADERS[loader], tmp_path, raw, line)
    assert fix in str(error), str(error)


def test_a_json_syntax_error_names_its_column(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    path.write_bytes(b'{\n  "version": 1,\n  "metrics": {"a" 1}\n}')
    with pytest.raises(BaselineError) as caught:
        load_baseline(path)
    assert (caught.value.line, caught.value.column) == (3, 19)


def _baseline_text() -> str:
    return (ROOT / "baselines/baseline.json").read_text(encoding="utf-8")


def _line_of(text: str, fragment: str) -> int:
    return text[: text.index(fragment)].count("\n") + 1


@pytest.mark.parametrize(
    ("old", "new", "anchor", "named"),
    [
        ('"trace_digest": "sha256:', '"trace_digest": "md5:', '"trace_digest": "md5:', "trace"),
        ('"version": 1', '"version": 2', '"version": 2', "version"),
        ('"passed": ', '"pased": ', '"pased": ', "pased"),
        ('"allow_regression": ', '"allow_regression": "yes", "x": ', '"x": ', "history[0].x"),
        ('"rate": ', '"rate": 0.123456789, "y": ', '"y": ', "y"),
    ],
    ids=["pattern", "literal", "unknown-key", "nested-unknown", "extra-in-metric"],
)
def test_every_baseline_validation_error_names_the_line_of_its_key(
    tmp_path: Path, old: str, new: str, anchor: str, named: str
) -> None:
    text = _baseline_text().replace(old, new, 1)
    path = tmp_path / "baseline.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BaselineError) as caught:
        load_baseline(path)
    error = caught.value
    lines = {int(n) for n in re.findall(rf"^(?:{re.escape(str(path))}:)?(\d+): ", str(error), re.M)}
    assert error.line is not None and error.line > 1
    assert _line_of(text, anchor) in lines | {error.line}, str(error)
    assert named in str(error) and "proctor baseline record" in str(error)


def test_a_missing_baseline_key_names_the_line_of_its_parent(tmp_path: Path) -> None:
    text = _baseline_text()
    start = text.index('"checks": [')
    end = text.index("],", start) + 2
    text = text[:start] + text[end:]  # the first scenario loses its check list
    path = tmp_path / "baseline.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BaselineError) as caught:
        load_baseline(path)
    parent = text.rfind("\n", 0, start)
    parent_line = text[: text.rfind('": {', 0, parent)].count("\n") + 1
    assert caught.value.line == parent_line, str(caught.value)
    assert "checks" in str(caught.value)


def test_a_stored_trace_of_another_scenario_names_the_line_of_scenario_id(
    tmp_path: Path,
) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "mine.json").write_text('{\n  "run_id": "r",\n  "scenario_id": "other"\n}\n')
    with pytest.raises(BaselineError) as caught:
        load_baseline_traces(traces)
    assert caught.value.line == 3
