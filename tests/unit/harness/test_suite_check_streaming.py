"""A checked suite is checked and packed file by file: never held whole as models."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from harness import _scenario_load
from harness._scenario_load import LoadedScenario
from harness._suite_check import ContractBroken, load_checked_suite

SCENARIO = """\
id: {id}
description: reads a file
tags: [{tag}]
request: Read the README
script:
  - calls: [{{tool: {tool}, args: {{path: README.txt}}}}]
  - answer: done
expect:
  status: completed
"""


def _write(
    tmp_path: Path, name: str, sid: str, *, tag: str = "smoke", tool: str = "fs.read"
) -> None:
    (tmp_path / name).write_text(SCENARIO.format(id=sid, tag=tag, tool=tool), encoding="utf-8")


def test_each_files_scenarios_are_packed_before_the_next_file_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(3):
        _write(tmp_path, f"f{n}.yaml", f"s{n}")
    events: list[str] = []
    load_file, packed = _scenario_load._load_file, LoadedScenario.packed

    def logged_load(path: Path, *args: object) -> list[LoadedScenario]:
        events.append(f"load {path.name}")
        return load_file(path, *args)  # type: ignore[arg-type]

    def logged_packed(self: LoadedScenario) -> LoadedScenario:
        if not isinstance(self.form, bytes):
            events.append(f"pack {self.scenario.id}")
        return packed(self)

    monkeypatch.setattr(_scenario_load, "_load_file", logged_load)
    monkeypatch.setattr(LoadedScenario, "packed", logged_packed)
    suite = load_checked_suite([tmp_path])
    assert [s.scenario.id for s in suite] == ["s0", "s1", "s2"]
    assert events == [
        "load f0.yaml",
        "pack s0",
        "load f1.yaml",
        "pack s1",
        "load f2.yaml",
        "pack s2",
    ]


def test_no_earlier_files_scenario_is_held_in_memory_when_the_next_file_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # They are on disk (the suite's spill) as soon as their file is checked: memory stays flat.
    for n in range(4):
        _write(tmp_path, f"f{n}.yaml", f"s{n}")
    alive: list[int] = []
    load_file = _scenario_load._load_file

    def counted_load(path: Path, *args: object) -> list[LoadedScenario]:
        gc.collect()
        alive.append(sum(1 for item in gc.get_objects() if type(item) is LoadedScenario))
        return load_file(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(_scenario_load, "_load_file", counted_load)
    suite = load_checked_suite([tmp_path])
    assert alive == [0, 0, 0, 0]
    assert [s.scenario.id for s in suite] == ["s0", "s1", "s2", "s3"]
    assert suite.display_path_of("s2") == suite[2].display_path
    assert suite.by_id("s3") == suite[3] and suite.by_id("nope") is None


def test_a_contract_violation_in_any_file_still_fails_the_suite_with_every_violation(
    tmp_path: Path,
) -> None:
    _write(tmp_path, "a.yaml", "ok")
    _write(tmp_path, "b.yaml", "bad-1", tool="fs.raed")
    _write(tmp_path, "c.yaml", "bad-2", tool="fs.wirte")
    with pytest.raises(ContractBroken) as caught:
        load_checked_suite([tmp_path])
    text = str(caught.value)
    assert "fs.raed" in text and "fs.wirte" in text
    assert text.index("b.yaml") < text.index("c.yaml")


def test_a_broken_scenario_left_out_by_the_tags_is_not_contract_checked(tmp_path: Path) -> None:
    _write(tmp_path, "a.yaml", "picked", tag="smoke")
    _write(tmp_path, "b.yaml", "left-out", tag="slow", tool="fs.raed")
    suite = load_checked_suite([tmp_path], tags=["smoke"])
    assert [s.scenario.id for s in suite] == ["picked"]
    with pytest.raises(ContractBroken):
        load_checked_suite([tmp_path])


def test_loading_a_checked_suite_never_unpacks_a_scenario_to_learn_its_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Duplicate ids and the spill's keys need only the id: a packed scenario keeps it beside
    # its JSON, so the load does not inflate and validate each model again for it.
    for n in range(3):
        _write(tmp_path, f"f{n}.yaml", f"s{n}")
    unpacked: list[bytes] = []
    real = _scenario_load.unpack_scenario

    def counted(packed: bytes) -> object:
        unpacked.append(packed)
        return real(packed)

    monkeypatch.setattr(_scenario_load, "unpack_scenario", counted)
    suite = load_checked_suite([tmp_path], use_cache=False)
    assert unpacked == []
    assert [s.scenario_id for s in suite] == ["s0", "s1", "s2"]
    assert [s.scenario.id for s in suite] == ["s0", "s1", "s2"]  # the same ids, unpacked

