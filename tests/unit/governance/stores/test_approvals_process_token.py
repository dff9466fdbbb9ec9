"""Process tokens: a live process is alive; a reaped, zombie or pid-reusing one is not."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from governance.core._process_token import current_process_token, process_is_alive, process_token

needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def _sleeper() -> subprocess.Popen[bytes]:
    """A child that runs until its stdin is closed."""
    return subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )


@needs_proc
def test_the_current_token_is_the_pid_and_the_start_time() -> None:
    token = current_process_token()
    assert re.fullmatch(r"\d+:\d+", token)
    assert token.split(":")[0] == str(os.getpid())
    assert token == process_token(os.getpid())
    assert token == current_process_token(), "stable for the life of the process"


def test_a_process_is_alive_to_itself() -> None:
    assert process_is_alive(current_process_token())


@needs_proc
def test_a_child_is_alive_while_it_runs_and_dead_once_reaped() -> None:
    with _sleeper() as child:
        token = process_token(child.pid)
        assert token is not None and token.startswith(f"{child.pid}:")
        assert token != current_process_token()
        assert process_is_alive(token)
        assert child.stdin is not None
        child.stdin.close()
        assert child.wait(timeout=10) == 0
    assert not process_is_alive(token)
    assert process_token(child.pid) is None


@needs_proc
def test_an_exited_but_unreaped_child_is_not_alive() -> None:
    with _sleeper() as child:
        token = process_token(child.pid)
        assert token is not None
        assert child.stdin is not None
        child.stdin.close()
        # Wait for the exit without reaping: the pid now names a zombie.
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        try:
            os.kill(child.pid, 0)  # the pid still exists...
            assert not process_is_alive(token)  # ...but nothing runs there
            assert process_token(child.pid) is None
        finally:
            assert child.wait(timeout=10) == 0


@needs_proc
def test_the_right_pid_with_another_start_time_is_a_reused_pid_not_the_waiter() -> None:
    pid, start = current_process_token().split(":")
    assert not process_is_alive(f"{pid}:{int(start) + 1}")
    assert not process_is_alive(f"{pid}:{int(start) - 1}")
    assert not process_is_alive(f"{pid}:not-a-number")


def test_a_pid_only_token_is_alive_while_the_pid_exists() -> None:
    assert process_is_alive(str(os.getpid()))


@pytest.mark.parametrize(
    "token",
    ["", "abc", "0", "-1", "0:1", "-1:5", ":5", "12:", " 12", "\u0661\u0662", "1e3", "4194305000"],
)
def test_malformed_tokens_and_group_pids_are_not_alive(token: str) -> None:
    # "0" and negative pids would make kill() signal a whole process group: never probed.
    assert not process_is_alive(token)


@needs_proc
def test_the_current_token_reads_proc_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import governance.core._process_token as module

    reads: list[int] = []
    real = module._read_stat

    def counting(pid: int) -> tuple[str, str]:
        reads.append(pid)
        return real(pid)

    monkeypatch.setattr(module, "_CURRENT", None)
    monkeypatch.setattr(module, "_read_stat", counting)
    first = current_process_token()
    assert current_process_token() == first
    assert reads == [os.getpid()]


@needs_proc
def test_a_forked_child_reads_its_own_token(monkeypatch: pytest.MonkeyPatch) -> None:
    import governance.core._process_token as module

    monkeypatch.setattr(module, "_CURRENT", None)
    parent = current_process_token()
    with _sleeper() as child:
        # What a fork looks like from the module: the cached pid is no longer this one.
        monkeypatch.setattr(module.os, "getpid", lambda: child.pid)
        assert current_process_token() == process_token(child.pid) != parent
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=10)
