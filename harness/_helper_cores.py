"""How many processes a suite run's helper work may use beside the one running its scenarios.

Helper work is what a run does around its scenarios and can split without changing a byte of
its output: checking half of the suite's files on a cold check cache
(`harness._suite_check_split`), writing report.html while the other reports are written
(`harness.reports._side_process`). A `-j N` run was given N processes for it; a serial run
(`-j 1`: one scenario at a time, in one process) may still put that work on a second core
when this process is allowed to run on more than one, which costs the same CPU and no longer
waits on one core. Pinned to a single CPU (`taskset -c 0`, a one-CPU container), it does all
of it in order, in one process, as before.
"""

from __future__ import annotations

import os


def spare_core() -> bool:
    """This process may run on more than one CPU: its affinity mask says so (the machine's CPU
    count where the platform has no mask)."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        return len(affinity(0)) > 1
    return (os.cpu_count() or 1) > 1


def helper_processes(jobs: int) -> int:
    """The processes a run's helper work may use: the run's `-j` when it is more than one,
    else two when there is a core to spare, else one."""
    if jobs > 1:
        return jobs
    return 2 if spare_core() else 1
