"""What `proctor merge` refuses, from the shards' records alone (harness._merge)."""

from __future__ import annotations

from harness._merge import ShardDir, partition_problems, record_problems
from harness._shard import (
    BaselineRecord,
    SelectionRecord,
    ShardOptions,
    ShardRecord,
    shard_of,
)

SHA = "sha256:" + "0" * 64
OTHER = "sha256:" + "1" * 64
IDS = [f"s{n}" for n in range(12)]


def _record(index: int, count: int = 3, **changes: object) -> ShardRecord:
    record = ShardRecord(
        index=index,
        count=count,
        run_id=f"run-{index}",
        scenario_ids=[sid for sid in IDS if shard_of(sid, count) == index],
        suite_digest=SHA,
        suite_size=len(IDS),
        commit="c" * 40,
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
    cases = {
        "commit": {"commit": "d" * 40},
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
