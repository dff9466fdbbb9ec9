"""`proctor check` lists the MCP servers of every config side by side, and fails as before."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import governance
from governance import ConfigError, McpConfig
from harness._suite_check import load_checked_suite, mcp_listing

CONFIG = """\
version: 1
servers:
  demo:
    transport: stdio
    command: python
    args: ["-m", "stubs.mcp_demo"]
"""

SCENARIO = """\
- id: {id}
  description: reads a file with {config} configured
  mcp_config: {config}
  request: Read the README
  script:
    - calls: [{{tool: fs.read, args: {{path: README.txt}}}}]
    - answer: done
  expect:
    status: completed
    must_execute: [fs.read]
"""


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    mcp_listing.cache_clear()
    yield
    mcp_listing.cache_clear()


def _suite(tmp_path: Path, configs: list[str]) -> Path:
    entries = []
    for index, name in enumerate(configs):
        (tmp_path / name).write_text(CONFIG, encoding="utf-8")
        entries.append(SCENARIO.format(id=f"s{index}", config=name))
    suite = tmp_path / "suite.yaml"
    suite.write_text("scenarios:\n" + "".join(entries), encoding="utf-8")
    return suite


def test_the_servers_of_two_configs_are_started_side_by_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each fake start waits for the other: listed one after the other, the barrier breaks.
    both_starting = threading.Barrier(2, timeout=10)
    started: list[str] = []

    def open_sources(config: McpConfig) -> list[Any]:
        started.append(threading.current_thread().name)
        both_starting.wait()
        return []

    monkeypatch.setattr(governance, "open_mcp_sources", open_sources, raising=False)
    suite = _suite(tmp_path, ["a.yaml", "b.yaml", "a.yaml"])
    assert [s.scenario.id for s in load_checked_suite([suite])] == ["s0", "s1", "s2"]
    assert len(started) == 2  # one start per distinct config, not per scenario
    assert mcp_listing.cache_info().currsize == 2


def test_a_config_whose_servers_fail_to_start_fails_the_check_as_it_did_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def open_sources(config: McpConfig) -> list[Any]:
        if config.path.name == "broken.yaml":
            raise ConfigError(config.path, 3, "the server would not start")
        return []

    monkeypatch.setattr(governance, "open_mcp_sources", open_sources, raising=False)
    suite = _suite(tmp_path, ["good.yaml", "broken.yaml"])
    with pytest.raises(ConfigError, match="the server would not start") as caught:
        load_checked_suite([suite])
    assert "broken.yaml:3" in str(caught.value)
    assert mcp_listing.cache_info().currsize == 1  # only the good config's registry is kept


def test_a_config_without_a_lock_is_listed_live_and_the_check_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[str] = []

    def open_sources(config: McpConfig) -> list[Any]:
        started.append(config.path.name)
        return []

    monkeypatch.setattr(governance, "open_mcp_sources", open_sources, raising=False)
    notes: list[str] = []
    load_checked_suite([_suite(tmp_path, ["a.yaml", "a.yaml"])], note=notes.append)
    assert started == ["a.yaml"]
    (line,) = notes
    assert "\n" not in line
    assert "started its MCP servers" in line and "it has no pins" in line
    assert "set `require_pins: true` and run `proctor mcp pin --config" in line
