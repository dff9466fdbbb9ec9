"""A spill keeps records on disk and gives them back by position, by key and in order."""

from __future__ import annotations

from harness._spill import Spill


def test_records_read_back_equal_by_position_key_and_in_order_across_read_batches() -> None:
    spill: Spill[tuple[str, int]] = Spill()
    records = [(f"s{n}", n) for n in range(600)]  # more than one batch of reads
    for record in records:
        spill.append(record, key=record[0])
    assert list(spill) == records
    assert [spill.at(n) for n in (0, 255, 256, 599)] == [records[n] for n in (0, 255, 256, 599)]
    assert spill.get("s300") == ("s300", 300)
    assert spill.position("s300") == 300
    assert list(spill.keys()) == [sid for sid, _ in records]
    assert len(spill) == 600


def test_an_unknown_key_has_no_record_and_no_position() -> None:
    spill: Spill[str] = Spill()
    spill.append("x", key="a")
    assert spill.get("b") is None
    assert spill.position("b") is None
    assert "b" not in spill


def test_a_key_stored_again_names_its_latest_record() -> None:
    spill: Spill[str] = Spill()
    spill.append("first", key="a")
    spill.append("second", key="a")
    assert spill.get("a") == "second"
    assert list(spill) == ["first", "second"]


def test_records_appended_after_a_read_are_read_back_too() -> None:
    spill: Spill[int] = Spill()
    spill.append(1)
    assert list(spill) == [1]
    spill.append(2)
    assert spill.at(1) == 2
    assert list(spill) == [1, 2]


def test_a_forked_child_reads_records_still_buffered_in_the_parent_and_writes_nothing() -> None:
    import os

    spill: Spill[str] = Spill()
    spill.append("first", key="a")
    spill.append("second", key="b")  # both still in the parent's write buffer
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: read a record, report it, leave without cleanup
        try:
            os.write(write_end, (spill.get("b") or "").encode())
        finally:
            os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    assert os.read(read_end, 100) == b"second"
    os.close(read_end)
    assert [spill.get("a"), spill.get("b")] == ["first", "second"]
    # Flushed once, before the fork: neither process had the records buffered to write again.
    assert os.fstat(spill._file.fileno()).st_size == spill._ends[-1]
