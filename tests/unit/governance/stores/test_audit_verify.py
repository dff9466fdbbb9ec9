"""The streaming verifier: it authenticates the stored bytes, and never holds a run in memory."""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
import tracemalloc
from contextlib import closing
from pathlib import Path

import pytest

from governance.core._canonical import canonical_json
from governance.core._clock import ManualClock
from governance.stores._audit import AuditLog, verify_rows
from governance.stores._audit_chain import ChainVerdict

KEY = b"verify-test-key"
KEYS = [pytest.param(None, id="unkeyed"), pytest.param(KEY, id="hmac")]
ORIGINAL = '{"n":3,"tool":"fs.read"}'


def build(path: Path, key: bytes | None, events: int = 5, runs: tuple[str, ...] = ("r1",)) -> None:
    with AuditLog(path, key=key, clock=ManualClock()) as log:
        for run in runs:
            batch = [("step", {"n": n, "tool": "fs.read"}) for n in range(1, events + 1)]
            log.append_many(run, batch)


def set_data(path: Path, text: str, seq: int = 3) -> None:
    with closing(sqlite3.connect(path)) as conn, conn:
        changed = conn.execute(
            "UPDATE audit_events SET data = ? WHERE run_id = 'r1' AND seq = ?", (text, seq)
        ).rowcount
    assert changed == 1


def verify(path: Path, key: bytes | None, run_id: str = "r1") -> ChainVerdict:
    with AuditLog(path, key=key, readonly=True) as log:
        return log.verify(run_id)


def test_the_stored_data_is_the_canonical_text_the_chain_hashes(tmp_path: Path) -> None:
    """The invariant the verifier relies on: it hashes the stored text as it is."""
    db = tmp_path / "a.db"
    build(db, None)
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute("SELECT data FROM audit_events ORDER BY seq").fetchall()
    assert rows[2][0] == ORIGINAL
    for (data,) in rows:
        assert canonical_json(json.loads(data)).decode() == data


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize(
    "text",
    [
        '{"n": 3, "tool": "fs.read"}',  # whitespace
        '{"tool":"fs.read","n":3}',  # key order
        '{"n":3,"tool":"fs.r\\u0065ad"}',  # an escape for a plain letter
        '{"n":3,"tool":"fs.delete","tool":"fs.read"}',  # duplicate key: first-wins reads delete
    ],
    ids=["whitespace", "key-order", "escape", "duplicate-key"],
)
def test_data_re_encoded_to_an_equal_value_is_detected_at_its_seq(
    tmp_path: Path, key: bytes | None, text: str
) -> None:
    """Decoding then re-encoding would hash these right; the stored bytes no longer do."""
    assert json.loads(text) == json.loads(ORIGINAL)  # Python's json reads the same value
    db = tmp_path / "a.db"
    build(db, key)
    set_data(db, text)
    verdict = verify(db, key)
    assert (verdict.ok, verdict.first_bad_seq, verdict.head) == (False, 3, None)
    assert verdict.reason is not None and "re-encoded" in verdict.reason


@pytest.mark.parametrize("key", KEYS)
def test_a_broken_run_still_counts_every_event_and_other_runs_verify(
    tmp_path: Path, key: bytes | None
) -> None:
    db = tmp_path / "a.db"
    build(db, key, events=7, runs=("r0", "r1", "r2"))
    set_data(db, "{}", seq=2)
    with AuditLog(db, key=key, readonly=True) as log:
        every = log.verify_all()
        one_by_one = [log.verify(run) for run in log.run_ids()]
    assert every == one_by_one
    assert [(v.run_id, v.ok, v.events, v.first_bad_seq) for v in every] == [
        ("r0", True, 7, None), ("r1", False, 7, 2), ("r2", True, 7, None),
    ]  # fmt: skip


def test_verify_rows_accepts_an_iterator_and_reads_it_only_once() -> None:
    def honest() -> list[tuple[object, ...]]:
        prev, rows = "sha256:" + "0" * 64, []
        for seq in (1, 2, 3):
            record = {"alg": "sha256", "data": {"n": seq}, "kind": "k", "run_id": "r",
                      "seq": seq, "ts": "t"}  # fmt: skip
            digest = "sha256:" + hashlib.sha256(prev.encode() + canonical_json(record)).hexdigest()
            rows.append(("r", seq, "k", "t", f'{{"n":{seq}}}', "sha256", prev, digest))
            prev = digest
        return rows

    rows = honest()
    verdict = verify_rows("r", iter(rows), None)
    assert (verdict.ok, verdict.events, verdict.head) == (True, 3, rows[-1][-1])
    assert verify_rows("r", iter(rows[1:]), None).first_bad_seq == 1


def test_the_fast_hmac_matches_the_standard_library_for_long_and_short_keys(
    tmp_path: Path,
) -> None:
    """The verifier precomputes HMAC pads; keys longer than a block are hashed first."""
    for key in (b"k", b"x" * 64, b"y" * 65, b"z" * 200):
        db = tmp_path / f"{len(key)}.db"
        build(db, key, events=3)
        assert verify(db, key).ok, len(key)
        with closing(sqlite3.connect(db)) as conn:
            stored = conn.execute("SELECT hash FROM audit_events WHERE seq = 1").fetchone()[0]
        record = {"alg": "hmac-sha256", "data": {"n": 1, "tool": "fs.read"}, "kind": "step",
                  "run_id": "r1", "seq": 1, "ts": "2026-01-01T00:00:00.000000Z"}  # fmt: skip
        message = ("hmac-sha256:" + "0" * 64).encode() + canonical_json(record)
        assert stored == "hmac-sha256:" + hmac.new(key, message, hashlib.sha256).hexdigest()


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("whole_log", [False, True], ids=["one-run", "verify-all"])
def test_verifying_a_long_run_never_holds_its_rows_in_memory(
    tmp_path: Path, key: bytes | None, whole_log: bool
) -> None:
    """Rows are streamed: peak Python memory does not grow with the run (5,000 rows are
    several MB as a list; the bound is a fraction of that)."""
    db = tmp_path / "a.db"
    with AuditLog(db, key=key, clock=ManualClock(), durability="os") as log:
        log.append_many("r1", [("step", {"n": n, "tool": "fs.read", "pad": "x" * 200})
                               for n in range(5_000)])  # fmt: skip
    with AuditLog(db, key=key, readonly=True) as log:
        tracemalloc.start()
        try:
            verdicts = log.verify_all() if whole_log else [log.verify("r1")]
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert [(v.ok, v.events) for v in verdicts] == [(True, 5_000)]
    assert peak < 256 * 1024, f"peak {peak} bytes: the rows were materialised"
