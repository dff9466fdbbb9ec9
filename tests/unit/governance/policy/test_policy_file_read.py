"""PolicyFile reads the whole file on every call, on a bare descriptor: a file that grew
after its size was taken, or one larger than a single read, is still read to its end."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from governance.core._errors import PolicyError
from governance.policy import _load
from governance.policy._load import PolicyFile

RULE = "  - {id: r%d, effect: allow, match: {tool: tool.n%d}}\n"


def _policy(rules: int) -> str:
    return "version: 1\nrules:\n" + "".join(RULE % (n, n) for n in range(rules))


def test_a_policy_file_larger_than_one_read_is_read_to_its_end(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(_policy(2_000))  # ~110 KB: more than the 64 KB a follow-up read takes
    assert path.stat().st_size > 1 << 16
    stat, raw = _load._read(path)
    assert raw == path.read_bytes() and stat.st_size == len(raw)


def test_a_policy_file_that_grew_after_its_size_was_taken_is_read_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(_policy(1))
    policy = PolicyFile(path)
    assert len(policy.current().rules) == 1
    path.write_text(_policy(300))
    real_fstat = os.fstat

    def stale(fd: int) -> os.stat_result:  # the size as it was before the edit
        result = real_fstat(fd)
        fields = list(result)
        fields[6] = 10  # st_size
        return os.stat_result(fields)

    monkeypatch.setattr(_load.os, "fstat", stale)
    assert len(policy.current().rules) == 300


def test_a_policy_path_that_is_a_directory_is_a_policy_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read the policy file"):
        PolicyFile(tmp_path)
