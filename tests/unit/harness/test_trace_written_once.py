"""A trace is dumped once when it is written: the file bytes and the digest from that one dump
are the ones the separate `canonical()` and `digest` give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from governance import canonical_json
from harness._trace import Trace
from tests.small_suite import REPO

TRACES = sorted((REPO / "baselines" / "traces").glob("*.json"))


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.stem)
def test_one_dump_gives_the_canonical_bytes_and_the_digest_without_the_run_id(
    path: Path,
) -> None:
    stored = json.loads(path.read_text(encoding="utf-8"))  # recorded without its run_id
    trace = Trace.model_validate({**stored, "run_id": "run-1"})
    raw, digest = trace.canonical_with_digest()
    assert raw == trace.canonical() == canonical_json({**stored, "run_id": "run-1"})
    assert digest == trace.digest
    renamed = trace.model_copy(update={"run_id": "run-other"})
    assert renamed.canonical_with_digest()[1] == digest
    assert renamed.canonical_with_digest()[0] != raw
