"""A `proctor` process imports the module of the command it will run before click parses the
command line, with the cyclic garbage collector paused, then freezes what the import built.

Importing a command builds tens of thousands of long-lived objects (modules, classes, pydantic
validators, compiled patterns); each young-generation collection during the import walks them
again and frees none, and later full collections walk them once more: ~0.1 s of a
1,000-scenario run's CPU (counted with `gc.callbacks`, benchmarks/RESULTS.md). Frozen, they
sit in the permanent generation: collections skip them, and a forked `-j` worker or report
writer does not copy their pages by touching their collector headers. Only the process's own
entry point does this (`harness.cli.main`); a test invoking the group in-process does not.
"""

from __future__ import annotations

import gc
import importlib
from collections.abc import Mapping, Sequence

from harness.cli._commands import LazyCommand


def preload_command(args: Sequence[str], lazy: Mapping[str, LazyCommand]) -> None:
    """Import the module of the command `args` names (its first word), collector paused; on
    success freeze the heap. Anything else (no command, an option, an unknown name, an import
    that fails) is left to click, which imports the command as it always does and reports a
    failure through the exit-code contract."""
    entry = lazy.get(args[0]) if args else None
    if entry is None:
        return
    gc.disable()
    try:
        importlib.import_module(entry.module)
    except Exception:  # click imports it again and maps the error onto an exit code
        return
    finally:
        gc.enable()
    gc.freeze()
