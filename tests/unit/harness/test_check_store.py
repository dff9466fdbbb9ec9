"""A streamed run's check results on disk, read back by scenario, in order, with the failures."""

from __future__ import annotations

import pytest

from harness._check_store import StoredChecks
from harness._results import CheckResult


def _check(sid: str, n: int, passed: bool) -> CheckResult:
    return CheckResult(sid, f"must_execute:t{n}", "must_execute", passed, f"why {n}")


def test_stored_checks_read_back_in_order_with_their_groups_count_and_failures() -> None:
    stored = StoredChecks()
    groups = {
        "a": [_check("a", 1, True), _check("a", 2, False)],
        "b": [],
        "c": [_check("c", 3, False)],
    }
    for sid, checks in groups.items():
        stored.add_group(sid, checks)
    flat = [c for checks in groups.values() for c in checks]
    assert list(stored) == flat
    assert len(stored) == 3
    assert stored[1] == flat[1] and list(stored[1:]) == flat[1:]
    assert [(sid, list(checks)) for sid, checks in stored.groups()] == list(groups.items())
    assert stored.failed == (flat[1], flat[2])


def test_a_check_of_another_scenario_is_refused_in_a_scenarios_group() -> None:
    stored = StoredChecks()
    with pytest.raises(ValueError, match="'b'"):
        stored.add_group("a", [_check("b", 1, True)])
    with pytest.raises(IndexError):
        stored[0]
