"""What `proctor merge` refuses, from the shards' records alone (harness._merge)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from harness._merge import (
    CodeHere,
    ShardDir,
    other_code_problems,
    partition_problems,
    record_problems,
)
from harness._shard import (
    BaselineRecord,
    CodeRecord,
    SelectionRecord,
    ShardOptions,
    ShardRecord,
    TreeRecord,
    shard_of,
)

SHA = "sha256:" + "0" * 64
OTHER = "sha256:" + "1" * 64
IDS = [f"s{n}" for n in range(12)]
CODE = CodeRecord(proctor="0.1.0", python="CPython 3.12.3", dependencies=SHA, source=SHA)


def _record(index: int, count: int = 3, **changes: object) -> ShardRecord:
    record = ShardRecord(
        index=index,
        count=count,
        run_id=f"run-{index}",
        scenario_ids=[sid for sid in IDS if shard_of(sid, count) == index],
        suite_digest=SHA,
        suite_size=len(IDS),
        commit="c" * 40,
        tree=TreeRecord(dirty=False),
        code=CODE,
        baseline=BaselineRecord(path="baselines/baseline.json", digest=SHA),
        options=ShardOptions(
            provider="replay", scenarios=[], selection=SelectionRecord(), fail_on_drift=False
        ),
        report_digest=SHA,
    )
    return record.model_copy(update=changes)


def _shards(*records: ShardRecord) -> list[ShardDir]:
    return [ShardDir(f"reports/shard-{n}", r) for n, r in enumerate(records, start=1)]


def test_all_shards_of_one_run_merge() -> None:
    shards = _shards(_record(1), _record(2), _record(3))
    assert record_problems(shards) == []
    assert partition_problems(IDS, shards) == []


def test_shards_of_different_commits_suites_baselines_or_options_are_refused_naming_them() -> None:
    other_options = ShardOptions(
        provider="replay", scenarios=[], selection=SelectionRecord(), fail_on_drift=True
    )
    cases: dict[str, dict[str, Any]] = {
        "commit": {"commit": "d" * 40},
        "uncommitted changes": {"tree": TreeRecord(dirty=True, digest=OTHER)},
        "code (Proctor, Python, dependencies, harness source)": {
            "code": CODE.model_copy(update={"source": OTHER})
        },
        "suite": {"suite_digest": OTHER},
        "baseline": {"baseline": BaselineRecord(path="baselines/baseline.json", digest=OTHER)},
        "options": {"options": other_options},
        "shard count": {"count": 4},
    }
    for what, change in cases.items():
        problems = record_problems(_shards(_record(1), _record(2, **change), _record(3)))
        assert len(problems) == 1, (what, problems)
        assert problems[0].startswith(what), problems
        assert "reports/shard-2" in problems[0] and "reports/shard-1" in problems[0]


def _here(**changes: Any) -> CodeHere:
    return dataclasses.replace(CodeHere("c" * 40, TreeRecord(dirty=False), CODE), **changes)


def test_a_merge_with_the_shards_commit_tree_and_code_finds_no_problem() -> None:
    shards = _shards(_record(1), _record(2), _record(3))
    assert other_code_problems(shards, _here()) == []


@pytest.mark.parametrize(
    ("here", "named"),
    [
        ({"commit": "e" * 40}, "commit: the shards ran at " + "c" * 40),
        ({"tree": TreeRecord(dirty=True, digest=OTHER)}, "uncommitted changes: the shards ran"),
        ({"code": CODE.model_copy(update={"source": OTHER})}, "code (source)"),
        ({"code": CODE.model_copy(update={"proctor": "0.2.0"})}, "code (proctor)"),
        ({"code": CODE.model_copy(update={"python": "CPython 3.13.0"})}, "code (python)"),
        ({"code": CODE.model_copy(update={"dependencies": OTHER})}, "code (dependencies)"),
    ],
)
def test_a_merge_with_another_commit_tree_or_code_than_the_shards_is_a_problem_naming_it(
    here: dict[str, object], named: str
) -> None:
    problems = other_code_problems(_shards(_record(1), _record(2), _record(3)), _here(**here))
    assert len(problems) == 1 and problems[0].startswith(named), problems


def test_a_dirty_tree_like_the_shards_is_no_problem_but_a_clean_one_is() -> None:
    dirty = TreeRecord(dirty=True, digest=OTHER)
    shards = _shards(*(_record(i, tree=dirty) for i in (1, 2, 3)))
    assert other_code_problems(shards, _here(tree=dirty)) == []
    assert "a clean tree" in other_code_problems(shards, _here())[0]


def test_outside_a_repository_commits_are_not_compared_but_the_code_still_is() -> None:
    shards = _shards(*(_record(i, commit=None, tree=None) for i in (1, 2, 3)))
    assert other_code_problems(shards, _here()) == []
    in_repo = _shards(_record(1), _record(2), _record(3))
    assert other_code_problems(in_repo, _here(commit=None, tree=None)) == []
    other = CODE.model_copy(update={"source": OTHER})
    assert len(other_code_problems(shards, _here(commit=None, tree=None, code=other))) == 1


def test_a_missing_shard_is_refused_naming_it() -> None:
    problems = record_problems(_shards(_record(1), _record(3)))
    assert problems == ["shard(s) 2/3 missing: the merge needs all 3 shard directories of the run"]


def test_a_shard_given_twice_is_refused_naming_both_directories() -> None:
    problems = record_problems(_shards(_record(1), _record(2), _record(2), _record(3)))
    assert problems == ["shard 2/3 is given twice: reports/shard-2, reports/shard-3"]


def test_a_shard_whose_index_was_changed_is_refused_by_the_partition() -> None:
    # Relabelled 2 -> 1 and 1 -> 2: the records alone look complete, the ids do not fit.
    one, two = _record(1), _record(2)
    shards = _shards(
        two.model_copy(update={"index": 1}), one.model_copy(update={"index": 2}), _record(3)
    )
    assert record_problems(shards) == []
    problems = partition_problems(IDS, shards)
    assert len(problems) == 2
    assert "reports/shard-1 (shard 1/3): ran" in problems[0]


def test_a_scenario_in_two_shards_is_refused_naming_it() -> None:
    one = _record(1)
    stolen = _record(2).scenario_ids[0]
    shards = _shards(
        one.model_copy(update={"scenario_ids": [*one.scenario_ids, stolen]}), _record(2), _record(3)
    )
    problems = partition_problems(IDS, shards)
    assert f"scenario {stolen} is in two shards: reports/shard-1 and reports/shard-2" in problems


def test_a_shard_lacking_a_scenario_of_its_part_is_refused() -> None:
    three = _record(3)
    shards = _shards(
        _record(1), _record(2), three.model_copy(update={"scenario_ids": three.scenario_ids[1:]})
    )
    problems = partition_problems(IDS, shards)
    assert problems == [f"reports/shard-3 (shard 3/3): lacks {three.scenario_ids[0]}"]


def test_a_scenario_of_the_suite_no_shard_ran_is_refused() -> None:
    shards = _shards(_record(1), _record(2), _record(3))
    problems = partition_problems([*IDS, "added-later"], shards)
    assert len(problems) == 1 and "lacks added-later" in problems[0]
