"""Run several Python children at once and collect what each said; none outlives the call.

A test that asserts on the first child's exit code and leaves the others running hands the
next test their unclosed pipes and `Popen.__del__` warnings (which pytest turns into errors
there), so the failure shows up in the wrong test. Here every child is reaped first.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str


def run_python_children(script: str, argvs: list[list[str]], *, timeout: float) -> list[Finished]:
    """One `python -c script *argv` per argv, started together; each one's exit and output.
    A child still running at `timeout` is killed and reported with returncode -9."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in argvs
    ]
    finished: list[Finished] = []
    try:
        for proc in procs:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                err += f"\n(killed after {timeout} s)"
            finished.append(Finished(proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
    return finished


def failures(finished: list[Finished]) -> list[str]:
    """The stderr of every child that did not exit 0 (empty when all did)."""
    return [f"exit {f.returncode}:\n{f.stderr}" for f in finished if f.returncode != 0]
