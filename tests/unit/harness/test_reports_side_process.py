"""A `-j N` run writes report.html in a forked child while the parent writes the other reports:
the same bytes, a failed or killed child fails the write (no manifest), the child is always
waited for, and nothing forks while another thread is alive.

The fork cases run in a fresh interpreter: this test process may hold threads started by other
tests (shared MCP servers, the page fixture), and then nothing forks, by design."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import harness.reports._write as report_write
from harness._errors import HarnessError
from harness.reports import write_reports
from harness.reports._side_process import can_fork, side_process
from tests.unit.harness.test_reports_sample import sample_result

REPO = Path(__file__).resolve().parents[3]

PRELUDE = """
import os, signal, sys, time
from pathlib import Path
from harness._errors import HarnessError
from harness.reports._side_process import can_fork, side_process
assert can_fork(), "a fresh interpreter has one thread"
"""


def _fresh(code: str, tmp_path: Path) -> str:
    """`code` run after PRELUDE in a new interpreter (cwd `tmp_path`); its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", PRELUDE + code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _pid_written_by(path: Path, *, fork: bool) -> int:
    def task() -> None:
        path.write_text(str(os.getpid()))

    with side_process(task, "pid", fork=fork):
        pass
    return int(path.read_text())


def test_the_task_runs_in_another_process_when_asked_to_fork(tmp_path: Path) -> None:
    out = _fresh(
        "with side_process(lambda: Path('pid').write_text(str(os.getpid())), 'pid', fork=True):\n"
        "    pass\n"
        "print(int(Path('pid').read_text()) != os.getpid())\n",
        tmp_path,
    )
    assert out.strip() == "True"


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


def test_a_child_that_raises_fails_the_block_with_the_name_of_what_it_wrote(
    tmp_path: Path,
) -> None:
    out = _fresh(
        "def broken():\n"
        "    raise RuntimeError('render failed')\n"
        "try:\n"
        "    with side_process(broken, 'report.html', fork=True):\n"
        "        pass\n"
        "except HarnessError as exc:\n"
        "    print(exc)\n",
        tmp_path,
    )
    assert "report.html exited 1" in out


def test_a_killed_child_fails_the_block_naming_the_signal(tmp_path: Path) -> None:
    out = _fresh(
        "try:\n"
        "    with side_process(lambda: os.kill(os.getpid(), signal.SIGKILL), 'x', fork=True):\n"
        "        pass\n"
        "except HarnessError as exc:\n"
        "    print(exc)\n",
        tmp_path,
    )
    assert "killed by signal 9" in out


def test_the_child_is_waited_for_even_when_the_parents_part_raises(tmp_path: Path) -> None:
    out = _fresh(
        "def slow():\n"
        "    time.sleep(0.3)\n"
        "    Path('done').write_text('written')\n"
        "try:\n"
        "    with side_process(slow, 'slow', fork=True):\n"
        "        raise ValueError('parent')\n"
        "except ValueError:\n"
        "    print(Path('done').read_text())\n",  # the exit waited for the child to finish
        tmp_path,
    )
    assert out.strip() == "written"


def test_reports_written_with_two_processes_are_byte_identical(tmp_path: Path) -> None:
    out = _fresh(
        "from harness.reports import write_reports\n"
        "from tests.unit.harness.test_reports_sample import sample_result\n"
        "forked = []\n"
        "os.register_at_fork(after_in_parent=lambda: forked.append(1))\n"
        "for jobs in (1, 2):\n"
        "    write_reports(sample_result(), Path(str(jobs)), jobs=jobs)\n"
        "print(len(forked))\n",
        tmp_path,
    )
    assert out.strip() == "1"  # only the two-process write forked
    for path in (tmp_path / "1").iterdir():
        if path.is_file():
            assert (tmp_path / "2" / path.name).read_bytes() == path.read_bytes(), path.name
    assert sorted(p.name for p in (tmp_path / "2").iterdir()) == sorted(
        p.name for p in (tmp_path / "1").iterdir()
    )
    assert not [p for p in (tmp_path / "2").rglob(".*")]  # no temp file left behind


def test_a_report_html_that_fails_to_render_leaves_no_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(result: object) -> list[str]:
        raise RuntimeError("render failed")

    monkeypatch.setattr(report_write, "html_chunks", broken)
    for jobs in (1, 2):  # forked or not (this process may hold threads): no manifest
        with pytest.raises((HarnessError, RuntimeError)):
            write_reports(sample_result(), tmp_path / str(jobs), jobs=jobs)
        assert not (tmp_path / str(jobs) / "manifest.json").exists()
        assert not (tmp_path / str(jobs) / "report.html").exists()


def test_a_forked_report_html_that_fails_leaves_no_manifest(tmp_path: Path) -> None:
    out = _fresh(
        "import harness.reports._write as w\n"
        "from tests.unit.harness.test_reports_sample import sample_result\n"
        "def broken(result):\n"
        "    raise RuntimeError('render failed')\n"
        "w.html_chunks = broken\n"
        "try:\n"
        "    w.write_reports(sample_result(), Path('out'), jobs=2)\n"
        "except HarnessError as exc:\n"
        "    print(exc)\n",
        tmp_path,
    )
    assert "report.html exited 1" in out
    assert not (tmp_path / "out" / "manifest.json").exists()
    assert (tmp_path / "out" / "report.json").exists()  # the parent's part was written
