"""The manifest written entry by entry is byte for byte the one the model writes, signed alike."""

from __future__ import annotations

import hashlib

import pytest

from harness._manifest import (
    ManifestTrace,
    RunManifest,
    build_manifest,
    manifest_chunks,
    signature_problem,
)

IDS = ["a", "b-é", 'q"uo\\te', "ctl\x01\x1f\x7f\n", "zz\u2028", "🙂"]


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("key", [None, b"k3y"])
@pytest.mark.parametrize("ids", [[], ["a"], IDS])
def test_the_streamed_manifest_equals_the_models_json_signed_or_not(
    ids: list[str], key: bytes | None
) -> None:
    ids = sorted(ids)
    pinned = {s: ManifestTrace(file=f"traces/{s}.json", digest=_digest(s)) for s in ids}
    whole = build_manifest("run-ü\x02", pinned, key=key, report_digest=_digest("report"))
    entries = [(s, f"traces/{s}.json", _digest(s)) for s in ids]
    text = "".join(manifest_chunks("run-ü\x02", entries, key=key, report_digest=_digest("report")))
    assert text == whole.model_dump_json(indent=2)
    assert signature_problem(RunManifest.model_validate_json(text), key) is None


def test_entries_out_of_order_or_with_a_bad_digest_are_refused() -> None:
    report = _digest("report")
    unsorted = [("b", "traces/b.json", _digest("b")), ("a", "traces/a.json", _digest("a"))]
    with pytest.raises(ValueError, match="out of order"):
        "".join(manifest_chunks("run", unsorted, key=None, report_digest=report))
    with pytest.raises(ValueError, match="trace digest"):
        "".join(manifest_chunks("run", [("a", "f", "md5:x")], key=None, report_digest=report))
    with pytest.raises(ValueError, match="report digest"):
        "".join(manifest_chunks("run", [], key=None, report_digest="sha256:short"))
