"""How many processes a run's helper work (half a cold check, report.html) may use: the run's
`-j`, or two for a serial run with a core to spare, or one on a single CPU."""

from __future__ import annotations

import os

import pytest

from harness._helper_cores import helper_processes, spare_core


def test_a_run_given_several_processes_keeps_that_number(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert helper_processes(3) == 3


def test_a_serial_run_takes_a_second_process_when_a_core_is_spare(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert spare_core()
    assert helper_processes(1) == 2


def test_a_serial_run_pinned_to_one_cpu_keeps_to_one_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The affinity mask decides, not the machine's CPU count: `taskset -c 0` on a big host.
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert not spare_core()
    assert helper_processes(1) == 1


@pytest.mark.parametrize(("count", "spare"), [(None, False), (1, False), (2, True)])
def test_without_an_affinity_mask_the_cpu_count_decides(
    monkeypatch: pytest.MonkeyPatch, count: int | None, spare: bool
) -> None:
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: count)
    assert spare_core() is spare
    assert helper_processes(1) == (2 if spare else 1)
