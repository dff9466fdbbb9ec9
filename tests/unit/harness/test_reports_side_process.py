"""A `-j N` run writes report.html in a forked child while the parent writes the other reports:
the same bytes, a failed or killed child fails the write (no manifest), the child is always
waited for, and nothing forks while another thread is alive."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

import harness.reports._write as report_write
from harness._errors import HarnessError
from harness.reports import write_reports
from harness.reports._side_process import can_fork, side_process
from tests.unit.harness.test_reports_sample import sample_result

needs_fork = pytest.mark.skipif(not can_fork(), reason="fork is not safe in this process")


def _pid_written_by(path: Path, *, fork: bool) -> int:
    with side_process(lambda: path.write_text(str(os.getpid())), "pid", fork=fork):
        pass
    return int(path.read_text())


@needs_fork
def test_the_task_runs_in_another_process_when_asked_to_fork(tmp_path: Path) -> None:
    assert _pid_written_by(tmp_path / "pid", fork=True) != os.getpid()


def test_the_task_runs_here_when_not_asked_to_fork(tmp_path: Path) -> None:
    assert _pid_written_by(tmp_path / "pid", fork=False) == os.getpid()


def test_nothing_forks_while_another_thread_is_alive(tmp_path: Path) -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not can_fork()
        assert _pid_written_by(tmp_path / "pid", fork=True) == os.getpid()
    finally:
        stop.set()
        other.join()


@needs_fork
def test_a_child_that_raises_fails_the_block_with_the_name_of_what_it_wrote() -> None:
    def broken() -> None:
        raise RuntimeError("render failed")

    with pytest.raises(HarnessError, match=r"report\.html exited 1"):
        with side_process(broken, "report.html", fork=True):
            pass


@needs_fork
def test_a_killed_child_fails_the_block_naming_the_signal() -> None:
    with pytest.raises(HarnessError, match="killed by signal 9"):
        with side_process(lambda: os.kill(os.getpid(), signal.SIGKILL), "x", fork=True):
            pass


@needs_fork
def test_the_child_is_waited_for_even_when_the_parents_part_raises(tmp_path: Path) -> None:
    done = tmp_path / "done"

    def slow() -> None:
        time.sleep(0.3)
        done.write_text("written")

    with pytest.raises(ValueError, match="parent"):
        with side_process(slow, "slow", fork=True):
            raise ValueError("parent")
    assert done.read_text() == "written"  # the exit waited for the child to finish


def test_reports_written_with_two_processes_are_byte_identical(tmp_path: Path) -> None:
    one = write_reports(sample_result(), tmp_path / "one", jobs=1)
    two = write_reports(sample_result(), tmp_path / "two", jobs=2)
    for name, path in one.items():
        if name != "traces":
            assert two[name].read_bytes() == path.read_bytes(), name
    assert not [p for p in (tmp_path / "two").rglob(".*")]  # no temp file left behind


def test_a_report_html_that_fails_to_render_leaves_no_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(result: object) -> list[str]:
        raise RuntimeError("render failed")

    monkeypatch.setattr(report_write, "html_chunks", broken)
    for jobs in (1, 2):
        with pytest.raises((HarnessError, RuntimeError)):
            write_reports(sample_result(), tmp_path / str(jobs), jobs=jobs)
        assert not (tmp_path / str(jobs) / "manifest.json").exists()
        assert not (tmp_path / str(jobs) / "report.html").exists()
