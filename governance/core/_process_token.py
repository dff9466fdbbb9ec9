"""Process identity that survives pid reuse: `"<pid>:<start ticks>"` read from /proc.

An approval held by an in-memory waiter records the waiter's token; at startup a request whose
waiter is gone is expired. A bare pid is not enough (pids are reused), so on Linux the token
also carries the process start time, and a live process with another start time is a stranger.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Final

_PROC: Final = Path("/proc")
# Field 22 of /proc/<pid>/stat; after the ")" closing the command name, fields start at 3.
_STARTTIME_INDEX: Final = 22 - 3
_STATE_INDEX: Final = 0
_DEAD_STATES: Final = frozenset({"Z", "X", "x"})


def _read_stat(pid: int) -> tuple[str, str]:
    """`(state, start ticks)` of `pid`; ValueError when the file does not parse."""
    raw = (_PROC / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
    # The command name may itself contain spaces and parentheses: split after the last ")".
    fields = raw[raw.rindex(")") + 1 :].split()
    if len(fields) <= _STARTTIME_INDEX or not fields[_STARTTIME_INDEX].isdigit():
        raise ValueError(f"unexpected /proc/{pid}/stat layout")
    return fields[_STATE_INDEX], fields[_STARTTIME_INDEX]


def process_token(pid: int) -> str | None:
    """The token of a live process `pid`, or None when it does not exist (or is a zombie)."""
    if pid <= 0:
        return None
    if not _PROC.is_dir():
        return str(pid) if _pid_exists(pid) else None
    try:
        state, started = _read_stat(pid)
    except (OSError, ValueError):
        return None
    if state in _DEAD_STATES:
        return None
    return f"{pid}:{started}"


# (pid, token) of this process once read: its start time never changes, but a forked child
# has another pid, so the pid is checked on every call (and the child reads its own).
_CURRENT: tuple[int, str] | None = None


def current_process_token() -> str:
    """This process's token: `"<pid>:<start ticks>"`, or `"<pid>"` where /proc is missing.

    /proc is read once per process (stores ask on every held call and start-up sweep)."""
    global _CURRENT
    pid = os.getpid()
    known = _CURRENT
    if known is not None and known[0] == pid:
        return known[1]
    token = process_token(pid)
    if token is None:
        return str(pid)  # not kept: a later call may read /proc after all
    _CURRENT = (pid, token)
    return token


def _pid_exists(pid: int) -> bool:
    if sys.platform == "win32":  # os.kill(pid, 0) would signal, not probe; assume alive
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except (OSError, OverflowError):  # OverflowError: no pid_t is that large
        return False
    return True


def process_is_alive(token: str) -> bool:
    """True when the process named by `token` still runs: its pid exists and its start matches.

    A malformed token, a pid <= 0 (which `kill` would treat as a process group), a zombie and a
    live process with another start time are all not alive.
    """
    pid_text, sep, start = token.partition(":")
    if not pid_text.isascii() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid <= 0 or (sep and not start) or not _pid_exists(pid):
        return False
    if not sep:
        return True  # a pid-only token (no /proc where it was made): existence is all we know
    if not _PROC.is_dir():
        return True
    try:
        state, started = _read_stat(pid)
    except FileNotFoundError:
        return False  # exited between the two checks
    except (OSError, ValueError):
        return True  # exists but unreadable (hidepid): cannot prove it is a stranger
    return state not in _DEAD_STATES and started == start
