"""Fuzzing every loader of a user's file: it loads, or it raises its own error naming file:line.

Inputs mix random bytes and text with mutations of the shipped valid files (control characters,
surrogates, deep nesting, aliases, tags, truncation, byte flips, repeated lines). No other
exception may escape. `make test` runs a bounded number of examples; PROCTOR_FUZZ=long selects
the `loader-fuzz-long` profile (10,000 examples per loader):

    PROCTOR_FUZZ=long .venv/bin/pytest -q tests/unit/test_loaders_fuzz.py \\
        --hypothesis-show-statistics
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from governance import ConfigError, PolicyError
from governance.mcp._config import McpConfigError, load_mcp_config
from governance.mcp._pins import McpLockError, load_pins
from governance.policy._load import PolicyFile, load_policy
from harness._baseline import load_baseline, load_baseline_traces
from harness._errors import BaselineError, ScenarioError
from harness._run_verify import StoredRunInvalid
from harness._scenario_load import load_scenarios
from harness.cli._ask import _load_script
from harness.cli._score import read_run

ROOT = Path(__file__).resolve().parents[2]

settings.register_profile(
    "loader-fuzz",
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "loader-fuzz-long", settings.get_profile("loader-fuzz"), max_examples=10_000
)
FUZZ = settings.get_profile(
    "loader-fuzz-long" if os.environ.get("PROCTOR_FUZZ") == "long" else "loader-fuzz"
)

_SEEDS = {
    "policy": [ROOT / "governance/data/default_policy.yaml", ROOT / "scenarios/policies/mcp.yaml"],
    "mcp": [ROOT / "scenarios/mcp/servers/demo.yaml"],
    "scenario": [ROOT / "scenarios/reads.yaml", ROOT / "scenarios/mcp/demo.yaml"],
    "script": [ROOT / "scenarios/scripts/refund-over-limit.yaml"],
    "baseline": [ROOT / "baselines/baseline.json"],
    "trace": sorted((ROOT / "baselines/traces").glob("*.json"))[:3],
    "pins": [],
}
_PINS = (
    b'{\n  "servers": {\n    "demo": {\n      "echo": "sha256:'
    + b"0" * 64
    + b'"\n    }\n  },\n  "version": 1\n}\n'
)

_INSERTS = [
    "\x00", "\x07", "\x1b", "\x7f", "\x85", "\x9f", "\ufeff", "\u2028", "\t", "\r", "\r\n",
    "\\ud800", "\\udfff", '"\\ud83d"', '"\\ud83d\\ude00"', "\\x00", "\\0",
    "\ud800", "\udc80", "\ufffe", "\uffff",
    "\n- ", "\n  ", ": ", "{", "}", "[", "]", ",", ":", '"', "'", "&a ", "*a", "*b", "<<: *a",
    "!!python/object:os.system ", "!!binary ", "!!set ", "!!timestamp ", "!custom ", "? ",
    ".inf", "-.inf", ".nan", "NaN", "Infinity", "-Infinity", "1e999", "9" * 5000, "0x1F",
    "2001-12-14", "~", "null", "true", "- !!map {}", "\n---\n", "%YAML 1.1\n", "#",
]
_WEIRD_VALUES = [
    ".inf", ".nan", "NaN", "Infinity", "1e400", "-" + "9" * 4400, "!!python/name:os.system",
    "!!binary AAAA", "&x [*x]", "2024-13-45", "[" * 3000 + "]" * 3000,
    "{" * 2000 + "}" * 2000, '"\\ud800"', "'\\ud800'", '"\\udc00x"', "!!int abc", "!!float x",
    "? [a]", "{1: 2}", "[[a, b]]: c", "*undefined",
]


def _laughs(levels: int) -> str:
    rows = ["l0: &l0 [x, x, x, x, x, x, x, x, x]"]
    rows += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(rows) + "\n"


def _deep(kind: int, depth: int) -> str:
    if kind == 0:
        return "[" * depth + "]" * depth
    if kind == 1:
        return '{"a": ' * depth + "1" + "}" * depth
    return "".join("  " * i + "- \n" for i in range(depth))


@st.composite
def _mutated(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    data = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.integers(0, 9))
        if len(data) > 100_000 and op in (5, 6, 8):
            continue  # keep examples small enough to run thousands
        at = draw(st.integers(0, len(data)))
        if op <= 2:
            insert = draw(st.sampled_from(_INSERTS))
            data = data[:at] + insert.encode("utf-8", "surrogatepass") + data[at:]
        elif op == 3:
            data = data[:at]
        elif op == 4 and data:
            i = min(at, len(data) - 1)
            data = data[:i] + bytes([data[i] ^ draw(st.integers(1, 255))]) + data[i + 1 :]
        elif op == 5:
            lines = data.split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(i, lines[i])  # a repeated line: duplicate keys and items
            data = b"\n".join(lines)
        elif op == 6:
            kind, depth = draw(st.integers(0, 2)), draw(st.sampled_from([70, 500, 3000]))
            nested = _deep(kind, depth if kind < 2 else 150)  # block nesting grows as depth²
            data = data[:at] + nested.encode() + data[at:]
        elif op == 7:
            value = draw(st.sampled_from(_WEIRD_VALUES))
            match = re.search(rb":[ ]+[^\n]+", data[at:])
            if match:
                start, end = at + match.start(), at + match.end()
                data = data[:start] + b": " + value.encode("utf-8") + data[end:]
        elif op == 8:
            data = _laughs(draw(st.integers(3, 7))).encode() + data
        else:
            encoding = draw(st.sampled_from(["utf-16", "utf-32", "utf-8-sig", "latin-1"]))
            text = data.decode("utf-8", "replace")
            data = text.encode(encoding, "replace")
    return data


def _inputs(kind: str) -> st.SearchStrategy[bytes]:
    seeds = [path.read_bytes() for path in _SEEDS[kind]] or [_PINS]
    return st.one_of(
        st.binary(max_size=400),
        st.text(max_size=300).map(lambda t: t.encode("utf-8")),
        st.text(st.characters(codec="utf-8"), max_size=200).map(lambda t: t.encode()),
        _mutated(seeds),
        _mutated(seeds),
        _mutated(seeds),
    )


_WORK = Path(tempfile.mkdtemp(prefix="proctor-loader-fuzz-"))


def _write(name: str, raw: bytes) -> Path:
    path = _WORK / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw)
    return path


def _assert_named(error: Exception, name: str) -> None:
    text = str(error)
    assert re.search(rf"{re.escape(name)}:\d+: ", text), text
    if isinstance(error, ConfigError):
        assert error.line is not None and error.line >= 1, text


def _check(load: Callable[[Path], Any], errors: type[Exception], name: str, raw: bytes) -> None:
    path = _write(name, raw)
    try:
        load(path)
    except errors as error:
        _assert_named(error, name)


@FUZZ
@given(_inputs("policy"))
def test_the_policy_loader_loads_or_names_file_and_line(raw: bytes) -> None:
    _check(load_policy, PolicyError, "policy.yaml", raw)


@FUZZ
@given(_inputs("policy"))
def test_a_hot_reloaded_policy_loads_or_names_file_and_line(raw: bytes) -> None:
    path = _write("reloaded/policy.yaml", _SEEDS["policy"][0].read_bytes())
    policy = PolicyFile(path)
    path.write_bytes(raw)
    os.utime(path, ns=(1, 1))  # an old mtime and a new size or content: a change either way
    try:
        policy.current()
    except PolicyError as error:
        _assert_named(error, "policy.yaml")


@FUZZ
@given(_inputs("mcp"))
def test_the_mcp_config_loader_loads_or_names_file_and_line(raw: bytes) -> None:
    _check(load_mcp_config, McpConfigError, "servers.yaml", raw)


@FUZZ
@given(_inputs("pins"))
def test_the_pin_file_loader_loads_or_names_file_and_line(raw: bytes) -> None:
    _check(load_pins, McpLockError, "servers.lock.json", raw)


@FUZZ
@given(_inputs("scenario"))
def test_the_scenario_loader_loads_or_names_file_and_line(raw: bytes) -> None:
    _check(lambda path: load_scenarios([path]), ScenarioError, "fuzzed.yaml", raw)


@FUZZ
@given(_inputs("script"))
def test_the_replay_script_loader_loads_or_names_file_and_line(raw: bytes) -> None:
    _check(_load_script, ConfigError, "script.yaml", raw)


@FUZZ
@given(_inputs("baseline"))
def test_the_baseline_loader_loads_or_names_file_and_line(raw: bytes) -> None:
    _check(load_baseline, BaselineError, "baseline.json", raw)


@FUZZ
@given(_inputs("trace"))
def test_the_stored_trace_loader_loads_or_names_file_and_line(raw: bytes) -> None:
    _write("traces/block-absolute-path.json", raw)
    try:
        load_baseline_traces(_WORK / "traces")
    except BaselineError as error:
        _assert_named(error, "block-absolute-path.json")


@FUZZ
@given(_inputs("trace"))
def test_a_stored_run_loads_or_names_file_and_line(raw: bytes) -> None:
    _write("run/report.json", b'{"run_id": "r", "scenarios": [{"trace": "traces/t.json"}]}')
    _write("run/traces/t.json", raw)
    try:
        read_run(_WORK / "run")
    except (click.BadParameter, StoredRunInvalid) as error:
        _assert_named(error, "t.json")


@pytest.mark.parametrize("kind", sorted(_SEEDS))
def test_the_fuzz_seeds_are_valid_files(kind: str) -> None:
    loaders: dict[str, Callable[[Path], Any]] = {
        "policy": load_policy,
        "mcp": load_mcp_config,
        "scenario": lambda path: load_scenarios([path]),
        "script": _load_script,
        "baseline": load_baseline,
        "trace": lambda path: load_baseline_traces(path.parent),
        "pins": lambda path: load_pins(_write("seed.lock.json", _PINS)),
    }
    for path in _SEEDS[kind] or [Path("pins")]:
        assert loaders[kind](path) is not None
