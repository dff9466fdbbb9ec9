"""Load and check a suite's files in two processes, for a run whose helper work may use two (a
`-j` run, or a serial one with a core to spare: `harness._helper_cores`): the parent and one forked
helper each take about half of the files (by size), and the parent takes the helper's outcomes
back in file order, so the suite, its problems, duplicate ids and contract violations come out
exactly as one process would find them.

Each process does the whole per-file work (read, check cache, parse, schema, contract check,
cache entry), so a cold check cache costs such a run about half the wall time it would. The
helper sends each of its files' outcome (pickled) down a pipe as soon as it has it; the pipe's
buffer keeps it at most a file or two ahead, so the parent never holds more than that.

Fork only: the helper must start with the parent's state (the loaded registry, the compiled
checks, the selection) and nothing to import; with a thread alive, or where there is no fork,
the files are checked here, one after the other. A helper that fails or dies is never trusted
for what it did not send: the parent checks every file the helper did not hand back itself.
"""

from __future__ import annotations

import os
import pickle
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from harness._scenario_load import FileOutcome, FileWork

# Per file, what the check left beside its outcome (contract violations, scenarios waiting for
# their MCP servers): `take` collects it in the helper, `give` adds it in the parent.
Take = Callable[[], Any]
Give = Callable[[Any], None]


def can_split() -> bool:
    """A helper can be forked: there is fork, and no other thread whose lock it could copy."""
    return hasattr(os, "fork") and threading.active_count() == 1


def shares(files: Sequence[tuple[Path, str]]) -> list[bool]:
    """Whether the helper takes each file: each goes, in order, to whichever side has fewer
    bytes so far (a file that cannot be sized counts as empty; it fails alike on either side)."""
    mine = theirs = 0
    taken: list[bool] = []
    for file, _ in files:
        try:
            size = file.stat().st_size
        except OSError:
            size = 0
        helper = theirs < mine
        taken.append(helper)
        if helper:
            theirs += size
        else:
            mine += size
    return taken


def split_in_two(
    files: Sequence[tuple[Path, str]], work: FileWork, take: Take, give: Give
) -> Iterator[FileOutcome]:
    """`work` on every file, about half of them in a forked helper; outcomes in file order."""
    taken = shares(files)
    if sum(taken) == 0 or not can_split():
        yield from (work(*f) for f in files)
        return
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the helper: never returns
        os.close(read_end)
        _help(files, taken, work, take, os.fdopen(write_end, "wb"))
    os.close(write_end)
    channel: BinaryIO | None = os.fdopen(read_end, "rb")
    try:
        for (file, shown), helper in zip(files, taken, strict=True):
            if helper and channel is not None:
                sent = _receive(channel)
                if sent is not None:
                    outcome, left = sent
                    give(left)
                    yield outcome
                    continue
                channel.close()  # failed or died: what it did not send is checked here
                channel = None
            yield work(file, shown)
    finally:
        if channel is not None:
            channel.close()  # a helper still writing gets EPIPE and exits
        os.waitpid(pid, 0)


def _receive(channel: BinaryIO) -> tuple[FileOutcome, Any] | None:
    try:
        sent = pickle.load(channel)
    except Exception:  # noqa: BLE001 - EOF or a torn message: the helper is gone
        return None
    if not (isinstance(sent, tuple) and len(sent) == 2):
        return None  # the helper's own failure marker
    return sent


def _help(
    files: Sequence[tuple[Path, str]],
    taken: Sequence[bool],
    work: FileWork,
    take: Take,
    channel: BinaryIO,
) -> None:
    """The helper's whole life: its files' outcomes, in order, then exit without running the
    parent's exit handlers or flushing its buffers (they are the parent's to flush)."""
    code = 0
    try:
        for (file, shown), helper in zip(files, taken, strict=True):
            if helper:
                outcome = work(file, shown)
                pickle.dump((outcome, take()), channel, protocol=pickle.HIGHEST_PROTOCOL)
                channel.flush()
    except BaseException:  # noqa: BLE001 - told to the parent, which checks the rest itself
        code = 1
        try:
            pickle.dump(None, channel)
            channel.flush()
        except BaseException:  # noqa: BLE001, S110 - the parent is gone or not reading
            pass
    finally:
        os._exit(code)
