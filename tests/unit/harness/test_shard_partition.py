"""`--shard I/N`: its form, the partition (a function of the scenario id alone) and shard.json's
signature."""

from __future__ import annotations

import random

import pytest

from harness._shard import (
    BaselineRecord,
    CodeRecord,
    SelectionRecord,
    Shard,
    ShardOptions,
    ShardRecord,
    ShardSpecError,
    shard_of,
)

SHA = "sha256:" + "0" * 64


@pytest.mark.parametrize("text", ["1/3", "3/3", "1/1", " 2/5 "])
def test_a_shard_is_i_of_n_with_i_from_1_to_n(text: str) -> None:
    shard = Shard.parse(text)
    assert 1 <= shard.index <= shard.count
    assert str(shard) == text.strip()


@pytest.mark.parametrize(
    "text", ["0/3", "4/3", "1/0", "0/0", "3", "1/3/3", "a/b", "-1/3", "1 / 3", ""]
)
def test_a_shard_outside_1_to_n_or_not_i_slash_n_is_refused_saying_the_form(text: str) -> None:
    with pytest.raises(ShardSpecError, match="I/N") as raised:
        Shard.parse(text)
    assert "--shard 1/3" in str(raised.value)


def test_the_partition_is_pinned_so_shards_of_two_proctor_versions_still_agree() -> None:
    # sha256("refund-rejected")[:8] as a big-endian integer, mod 3, plus one.
    assert shard_of("refund-rejected", 3) == 1
    assert shard_of("sql-select-allowed", 3) == 1
    assert [shard_of("read-file-list", n) for n in (1, 2, 3)] == [1, 2, 1]


def test_adding_or_reordering_scenarios_moves_no_other_scenario_to_another_shard() -> None:
    ids = [f"scenario-{n}" for n in range(300)]
    before = {sid: shard_of(sid, 4) for sid in ids}
    grown = [*ids, *(f"added-{n}" for n in range(50))]
    random.Random(7).shuffle(grown)
    after = {sid: shard_of(sid, 4) for sid in grown}
    assert {sid: after[sid] for sid in ids} == before


def test_every_shard_gets_some_of_a_large_suite_and_none_gets_most() -> None:
    counts = [0] * 5
    for n in range(1000):
        counts[shard_of(f"s-{n}", 5) - 1] += 1
    assert min(counts) > 150 and max(counts) < 250, counts


def _record(**changes: object) -> ShardRecord:
    record = ShardRecord(
        index=1,
        count=3,
        run_id="run-1",
        scenario_ids=["a"],
        suite_digest=SHA,
        suite_size=3,
        commit=None,
        tree=None,
        code=CodeRecord(proctor="0.1.0", python="CPython 3.12.3", dependencies=SHA, source=SHA),
        baseline=BaselineRecord(path=None),
        options=ShardOptions(
            provider="replay", scenarios=[], selection=SelectionRecord(), fail_on_drift=False
        ),
        report_digest=SHA,
    )
    return record.model_copy(update=changes)


def test_a_signed_shard_record_verifies_with_its_key_and_no_other() -> None:
    signed = _record().signed(b"k1")
    assert signed.signature is not None
    assert signed.signature_problem(b"k1") is None
    assert "does not verify" in (signed.signature_problem(b"k2") or "")


def test_a_signed_shard_record_changed_afterwards_is_refused() -> None:
    signed = _record().signed(b"k1")
    moved = signed.model_copy(update={"index": 2})
    assert "does not verify" in (moved.signature_problem(b"k1") or "")


def test_an_unsigned_shard_record_is_refused_when_a_key_is_set() -> None:
    assert "unsigned" in (_record().signature_problem(b"k1") or "")
    assert _record().signature_problem(None) is None


def test_a_signed_shard_record_is_refused_when_no_key_is_set_to_verify_it() -> None:
    signed = _record().signed(b"k1")
    assert signed.signature_problem(None) == (
        "the shards are signed; set PROCTOR_REPORT_KEY to verify them"
    )
    assert signed.signature_problem(b"") == signed.signature_problem(None)
