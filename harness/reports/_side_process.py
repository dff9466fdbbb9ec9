"""One report written by a forked child while this process writes the others.

A run writes its five reports after its last scenario finishes; report.html is the largest of
them (each trace read back and rendered), so when the run may use a second process for it (a
`-j N` run, or a serial one with a core to spare: `harness._helper_cores`) it is written by a
child forked at that moment while the parent writes the rest, and the parent waits for it
before the manifest (whose presence says the directory is complete).

Fork only: the child inherits the run's result (its spilled traces and checks are read with
`pread`, safe to share), and it is only safe while this process has a single thread. Anywhere
else (no fork, another thread alive) the task runs here, in order, exactly as it would have.
The child never returns into the caller's code: it leaves with `os._exit`, so no exit handler
of the parent (scratch removal, temporary files) runs twice. A child that fails is an error of
the whole write: no manifest is written.
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from harness._errors import HarnessError


def can_fork() -> bool:
    """Forking is safe here: the platform has it and this process runs one thread."""
    return hasattr(os, "fork") and threading.active_count() == 1


@contextmanager
def side_process(task: Callable[[], None], name: str, *, fork: bool) -> Iterator[None]:
    """Run `task` in a forked child for the duration of the `with` block (its exit waits for
    the child and raises `HarnessError` if the child failed); without `fork`, or where forking
    is unsafe, run it here first."""
    if not fork or not can_fork():
        task()
        yield
        return
    for stream in (sys.stdout, sys.stderr):  # nothing buffered is inherited twice
        stream.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child's coverage is not collected)
        code = 1
        try:
            task()
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            try:
                sys.stderr.flush()
            finally:
                os._exit(code)
    try:
        yield
    finally:
        _, status = os.waitpid(pid, 0)  # reaped even when the parent's part raised
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        how = f"was killed by signal {-code}" if code < 0 else f"exited {code}"
        raise HarnessError(f"the process writing {name} {how}; the reports are incomplete")
