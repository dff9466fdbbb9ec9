"""A checked scenario file is not loaded and checked again while it, its policies and the
checker are unchanged; any change is seen, and a damaged cache entry is ignored."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness import _scenario_load
from harness._check_cache import CACHE_ENV
from harness._scenario_load import LoadedScenario
from harness._suite_check import ContractBroken, load_checked_suite

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"

SCENARIO = """\
id: {id}
description: {description}
tags: [smoke]
policy: policies/p.yaml
request: Read the README
script:
  - calls: [{{tool: {tool}, args: {{path: README.txt}}}}]
  - answer: done
expect:
  status: completed
  policy_evidence: [{{tool: fs.read, effect: allow, rule_ids: [{rule}]}}]
"""


def _suite(tmp_path: Path, *, tool: str = "fs.read", description: str = "reads") -> Path:
    root = tmp_path / "suite"
    (root / "policies").mkdir(parents=True, exist_ok=True)
    shutil.copy(SCENARIOS / "policies" / "budgets.yaml", root / "policies" / "p.yaml")
    rule = _a_rule_of(root / "policies" / "p.yaml")
    text = SCENARIO.format(id="s1", description=description, tool=tool, rule=rule)
    (root / "one.yaml").write_text(text, encoding="utf-8")
    return root


def _a_rule_of(policy: Path) -> str:
    for line in policy.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("- id:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError("the policy has no rule")


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files parsed (not served from the cache), in order."""
    parsed: list[str] = []
    load_file = _scenario_load._load_file

    def counted(path: Path, *args: object) -> list[LoadedScenario]:
        parsed.append(path.name)
        return load_file(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(_scenario_load, "_load_file", counted)
    return parsed


def _cache_dir() -> Path:
    import os

    return Path(os.environ[CACHE_ENV])


def _entries() -> list[Path]:
    return sorted(_cache_dir().glob("*.json"))


def test_an_unchanged_checked_file_is_not_parsed_again_and_loads_the_same(
    tmp_path: Path, loads: list[str]
) -> None:
    root = _suite(tmp_path)
    first = load_checked_suite([root])
    again = load_checked_suite([root])
    assert loads == ["one.yaml"]
    assert [(s.scenario, s.path, s.line, s.line_of("id"), s.display_path) for s in again] == [
        (s.scenario, s.path, s.line, s.line_of("id"), s.display_path) for s in first
    ]


def test_the_shipped_suite_loads_the_same_from_the_cache(loads: list[str]) -> None:
    first = load_checked_suite([SCENARIOS])
    parsed_first = len(loads)
    again = load_checked_suite([SCENARIOS])
    assert [(s.scenario, s.line, s.line_of("id"), s.display_path) for s in again] == [
        (s.scenario, s.line, s.line_of("id"), s.display_path) for s in first
    ]
    # only the files with MCP scenarios are parsed again: their tools are a server's
    assert 0 < len(loads) - parsed_first < parsed_first


def test_an_edited_scenario_file_is_seen(tmp_path: Path, loads: list[str]) -> None:
    root = _suite(tmp_path)
    load_checked_suite([root])
    _suite(tmp_path, description="reads, edited")
    again = load_checked_suite([root])
    assert [s.scenario.description for s in again] == ["reads, edited"]
    _suite(tmp_path, tool="fs.reed")  # now names a tool that does not exist
    with pytest.raises(ContractBroken, match="fs.reed"):
        load_checked_suite([root])
    assert loads == ["one.yaml"] * 3


def test_an_edited_policy_is_seen(tmp_path: Path, loads: list[str]) -> None:
    root = _suite(tmp_path)
    load_checked_suite([root])
    policy = root / "policies" / "p.yaml"
    rule = _a_rule_of(policy)
    policy.write_text(
        policy.read_text(encoding="utf-8").replace(f"id: {rule}", "id: renamed-rule"),
        encoding="utf-8",
    )
    with pytest.raises(ContractBroken, match=rule):
        load_checked_suite([root])
    assert loads == ["one.yaml", "one.yaml"]


def test_a_file_that_fails_its_check_is_not_stored(tmp_path: Path) -> None:
    root = _suite(tmp_path, tool="fs.reed")
    for _ in range(2):
        with pytest.raises(ContractBroken):
            load_checked_suite([root])
    assert _entries() == []


def test_a_file_loaded_for_some_tags_only_is_not_stored(tmp_path: Path) -> None:
    root = _suite(tmp_path)
    extra = SCENARIO.format(id="s2", description="x", tool="fs.reed", rule="r").replace(
        "tags: [smoke]", "tags: [other]"
    )
    (root / "two.yaml").write_text(extra, encoding="utf-8")
    suite = load_checked_suite([root], tags=["smoke"])  # two.yaml's ghost tool is not checked
    assert [s.scenario.id for s in suite] == ["s1"]
    stored = [json.loads(p.read_text(encoding="utf-8")) for p in _entries()]
    assert len(stored) == 1  # one.yaml, every scenario of which was checked; not two.yaml
    with pytest.raises(ContractBroken, match="fs.reed"):
        load_checked_suite([root])


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # truncated
        lambda text: "not json",
        lambda text: text.replace('"line":', '"line":1', 1),  # edited: digest no longer matches
    ],
)
def test_a_damaged_cache_entry_is_ignored_and_replaced(
    tmp_path: Path, loads: list[str], damage: object
) -> None:
    root = _suite(tmp_path)
    first = load_checked_suite([root])
    (entry,) = _entries()
    intact = entry.read_text(encoding="utf-8")
    entry.write_text(damage(intact), encoding="utf-8")  # type: ignore[operator]
    again = load_checked_suite([root])
    assert loads == ["one.yaml", "one.yaml"]
    assert [(s.scenario, s.line) for s in again] == [(s.scenario, s.line) for s in first]
    assert entry.read_text(encoding="utf-8") == intact


def _sealed(data: dict[str, Any], key: bytes | None = None) -> dict[str, Any]:
    """`data` with a MAC under `key` (default: this test's own cache key)."""
    import hashlib
    import hmac
    import os

    from harness import _check_cache

    if key is None:
        key = Path(os.environ[_check_cache.KEY_ENV]).read_bytes()
    body = {k: v for k, v in data.items() if k != "mac"}
    message = json.dumps(body, sort_keys=True).encode("utf-8")
    return {**body, "mac": hmac.new(key, message, hashlib.sha256).hexdigest()}


def test_an_entry_whose_scenario_is_not_a_scenario_is_ignored_even_with_a_valid_mac(
    tmp_path: Path, loads: list[str]
) -> None:
    import base64
    import zlib

    root = _suite(tmp_path)
    load_checked_suite([root])
    (entry,) = _entries()
    data = json.loads(entry.read_text(encoding="utf-8"))
    bogus = zlib.compress(b'{"id": "s1", "unexpected": true}', 1)
    data["scenarios"][0]["packed"] = base64.b64encode(bogus).decode("ascii")
    entry.write_text(json.dumps(_sealed(data)), encoding="utf-8")
    again = load_checked_suite([root])
    assert loads == ["one.yaml", "one.yaml"]
    assert [s.scenario.id for s in again] == ["s1"]


def test_an_empty_cache_setting_turns_the_cache_off(
    tmp_path: Path, loads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, "")
    root = _suite(tmp_path)
    load_checked_suite([root])
    load_checked_suite([root])
    assert loads == ["one.yaml", "one.yaml"]


def test_an_unwritable_cache_does_not_fail_the_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv(CACHE_ENV, str(blocker / "cache"))  # under a file: cannot be made
    root = _suite(tmp_path)
    assert [s.scenario.id for s in load_checked_suite([root])] == ["s1"]
    assert [s.scenario.id for s in load_checked_suite([root])] == ["s1"]


def test_a_cache_entry_is_named_by_its_key_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    load_checked_suite([_suite(tmp_path)])
    (entry,) = _entries()
    assert not list(_cache_dir().glob(".entry-*"))  # no temporary file left behind
    assert json.loads(entry.read_text(encoding="utf-8"))["key"] == entry.stem


def test_a_planted_entry_without_this_users_key_never_replaces_the_files_scenarios(
    tmp_path: Path, loads: list[str]
) -> None:
    # The attack: the cache serves an entry's scenarios instead of the file's. Someone who can
    # write the cache directory (a shared dir, a CI cache restored from another branch) plants
    # an entry keyed to a file's bytes holding other scenarios. Without the key it is ignored.
    root = _suite(tmp_path)
    load_checked_suite([root])
    (entry,) = _entries()
    data = json.loads(entry.read_text(encoding="utf-8"))
    import hashlib

    planted = _sealed(data, key=b"k" * 32)  # a well-formed entry, sealed with another key...
    # ...and carrying the plain SHA-256 self-digest that was all an entry needed before.
    planted["digest"] = hashlib.sha256(json.dumps(planted, sort_keys=True).encode()).hexdigest()
    entry.write_text(json.dumps(planted), encoding="utf-8")
    load_checked_suite([root])
    assert loads == ["one.yaml", "one.yaml"]  # not served: parsed and checked again


def test_a_cache_directory_others_can_write_is_neither_read_nor_written(
    tmp_path: Path, loads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    shared = tmp_path / "shared-cache"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("PROCTOR_CACHE_DIR", str(shared))
    root = _suite(tmp_path)
    load_checked_suite([root])
    load_checked_suite([root])
    assert loads == ["one.yaml", "one.yaml"]
    assert list(shared.iterdir()) == []


def test_a_policy_edited_during_a_load_is_not_recorded_as_the_one_the_check_ran_under(
    tmp_path: Path,
) -> None:
    from harness._check_cache import CheckCache

    cache = CheckCache(tmp_path / "c", "checker", b"k" * 32)
    policy = tmp_path / "p.yaml"
    cache.note_policy(policy, "d0")
    assert cache._policy_digest(policy) == "d0"
    cache.note_policy(policy, "d1")  # compiled from other bytes later in the same load
    assert cache._policy_digest(policy) is None  # so nothing naming it is stored
