"""A `-j` check split over two processes finds exactly what one process finds: the same
scenarios in order, every problem at its file and line, duplicate ids across the two halves,
contract violations; and a helper that fails or dies is never trusted for what it did not send."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import _suite_check, _suite_check_split
from harness._check_cache import cache_for, default_cache_dir
from harness._errors import ScenarioError
from harness._scenario_load import FileOutcome
from harness._suite_check import builtin_registry, load_checked_suite
from harness._suite_check_split import can_split, shares, split_in_two

GOOD = """\
  - id: {id}
    description: reads a file
    request: Read the README
    script:
      - calls: [{{tool: fs.read, args: {{path: README.txt}}}}]
      - answer: done
    expect:
      status: completed
"""
UNKNOWN_TOOL = GOOD.replace("tool: fs.read", "tool: fs.reed")
BAD_SCHEMA = GOOD.replace("status: completed", "status: finished")


@pytest.fixture(autouse=True)
def _fork_even_beside_stray_threads(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread another test left behind would make every check here run in one process,
    and the split would go untested: fork anyway (the work forked here takes no lock)."""
    if "thread" not in request.node.name:
        monkeypatch.setattr(_suite_check_split, "can_split", lambda: True)


def _write(root: Path, files: dict[str, list[str]]) -> Path:
    for name, entries in files.items():
        (root / name).write_text("scenarios:\n" + "".join(entries), encoding="utf-8")
    return root


def _snapshot(suite: Any) -> list[tuple[Any, ...]]:
    return [(s.scenario_id, s.form, s.display_path, dict(s.lines), s.line) for s in suite]


def _files(count: int) -> dict[str, list[str]]:
    return {f"f{n}.yaml": [GOOD.format(id=f"s{n}-{k}") for k in range(3)] for n in range(count)}


def test_a_split_check_loads_the_suite_one_process_loads(tmp_path: Path) -> None:
    suite = _write(tmp_path, _files(6))
    alone = _snapshot(load_checked_suite([suite], use_cache=False))
    split = _snapshot(load_checked_suite([suite], use_cache=False, jobs=2))
    assert split == alone
    assert [s[0] for s in split] == [f"s{n}-{k}" for n in range(6) for k in range(3)]


@pytest.mark.parametrize("broken", ["f1.yaml", "f4.yaml"])  # one per side
def test_every_problem_of_either_half_is_reported_at_its_file_and_line(
    tmp_path: Path, broken: str
) -> None:
    files = _files(6)
    files[broken] = [GOOD.format(id="ok"), BAD_SCHEMA.format(id="bad")]
    files["f2.yaml"] = [GOOD.format(id="s0-1")]  # an id f0 already uses: the other half
    suite = _write(tmp_path, files)
    with pytest.raises(ScenarioError) as alone:
        load_checked_suite([suite], use_cache=False)
    with pytest.raises(ScenarioError) as split:
        load_checked_suite([suite], use_cache=False, jobs=2)
    assert str(split.value) == str(alone.value)
    assert f"{tmp_path / broken}:17: scenario bad: expect.status" in str(split.value)
    assert f"{tmp_path / 'f2.yaml'}:2: scenario s0-1: duplicate id" in str(split.value)


def test_contract_violations_of_both_halves_are_reported_in_file_order(tmp_path: Path) -> None:
    files = _files(4)
    files["f1.yaml"] = [UNKNOWN_TOOL.format(id="x1")]
    files["f2.yaml"] = [UNKNOWN_TOOL.format(id="x2")]
    suite = _write(tmp_path, files)
    with pytest.raises(ScenarioError) as alone:
        load_checked_suite([suite], use_cache=False)
    with pytest.raises(ScenarioError) as split:
        load_checked_suite([suite], use_cache=False, jobs=2)
    assert str(split.value) == str(alone.value)
    text = str(split.value)
    assert text.index("scenario x1") < text.index("scenario x2")
    assert "fs.reed" in text


def test_a_split_check_fills_the_check_cache_for_every_file_it_passed(tmp_path: Path) -> None:
    suite = _write(tmp_path, _files(4))
    load_checked_suite([suite], jobs=2)
    directory = default_cache_dir()
    assert directory is not None
    assert len(list(directory.glob("*.json"))) == 4  # two of them written by the helper
    assert _snapshot(load_checked_suite([suite], jobs=2)) == _snapshot(
        load_checked_suite([suite], use_cache=False)
    )


def _pids(files: list[tuple[Path, str]], work: Any) -> list[int]:
    outcomes: Iterator[FileOutcome] = split_in_two(files, work, lambda: None, lambda _: None)
    return [items[0] for items, _ in outcomes]  # type: ignore[misc]


def _named(count: int, tmp_path: Path) -> list[tuple[Path, str]]:
    found = []
    for n in range(count):
        path = tmp_path / f"{n}.yaml"
        path.write_bytes(b"x" * 100)
        found.append((path, path.name))
    return found


def test_the_helper_takes_about_half_of_the_files_by_size(tmp_path: Path) -> None:
    files = _named(6, tmp_path)
    assert shares(files) == [False, True, False, True, False, True]
    pids = _pids(files, lambda file, shown: ([os.getpid()], []))
    assert pids[0::2] == [os.getpid()] * 3
    assert os.getpid() not in pids[1::2]  # really checked elsewhere


@pytest.mark.parametrize("how", ["raises", "dies"])
def test_what_a_failed_helper_did_not_send_is_checked_here(tmp_path: Path, how: str) -> None:
    files = _named(8, tmp_path)
    parent = os.getpid()

    def work(file: Path, shown: str) -> FileOutcome:
        if os.getpid() != parent and file.name == "5.yaml":
            if how == "dies":
                os._exit(9)
            raise RuntimeError("helper broke")
        return [os.getpid(), shown], []  # type: ignore[list-item]

    outcomes: list[Any] = list(split_in_two(files, work, lambda: None, lambda _: None))
    assert [items[1] for items, _ in outcomes] == [f"{n}.yaml" for n in range(8)]
    pids = [items[0] for items, _ in outcomes]
    assert pids[1] != parent and pids[3] != parent  # sent before it failed: kept
    assert pids[5] == parent and pids[7] == parent  # never sent: checked here


def test_with_another_thread_alive_nothing_is_forked(tmp_path: Path) -> None:
    files = _named(4, tmp_path)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not can_split()
        pids = _pids(files, lambda file, shown: ([os.getpid()], []))
    finally:
        stop.set()
        thread.join()
    assert pids == [os.getpid()] * 4


def _count_splits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []

    def counted(*args: Any) -> Iterator[FileOutcome]:
        calls.append(1)
        return split_in_two(*args)

    monkeypatch.setattr(_suite_check, "split_in_two", counted)
    return calls


def test_a_warm_cache_is_read_back_in_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _write(tmp_path, _files(4))
    splits = _count_splits(monkeypatch)
    cold = _snapshot(load_checked_suite([suite], jobs=2))
    assert splits == [1]  # cold: checked in two processes
    assert _snapshot(load_checked_suite([suite], jobs=2)) == cold
    assert splits == [1]  # warm: every file had its entry, no helper was forked


def test_a_file_edited_since_it_was_cached_makes_the_check_split_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _write(tmp_path, _files(4))
    splits = _count_splits(monkeypatch)
    load_checked_suite([suite], jobs=2)
    _write(suite, {"f2.yaml": [GOOD.format(id="s2-0"), GOOD.format(id="s2-new")]})
    edited = _snapshot(load_checked_suite([suite], jobs=2))
    assert splits == [1, 1]
    assert "s2-new" in [row[0] for row in edited]
    assert edited == _snapshot(load_checked_suite([suite], use_cache=False))


def test_a_cache_holds_no_entry_for_a_file_it_cannot_read(tmp_path: Path) -> None:
    suite = _write(tmp_path, _files(2))
    load_checked_suite([suite])
    cache = cache_for(lambda: builtin_registry().digest)
    assert cache is not None
    files = sorted(suite.glob("*.yaml"))
    assert cache.holds_all(files)
    assert not cache.holds_all([*files, suite / "gone.yaml"])
    (suite / "f0.yaml").write_text("scenarios: []\n", encoding="utf-8")
    assert not cache.holds_all(files)  # its bytes changed: no entry for them
