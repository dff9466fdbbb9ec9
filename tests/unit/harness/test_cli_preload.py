"""The `proctor` entry point imports the command it will run with the cyclic collector paused,
then freezes the heap; anything that is not a command it can import is left to click as before.

Run in fresh interpreters: freezing is process-wide, and this test process must keep its own
collector state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

PROBE = """
import gc, json, sys
from harness.cli._commands import COMMANDS, LazyCommand
from harness.cli._preload import preload_command
table = dict(COMMANDS)
table["broken"] = LazyCommand("harness_no_such_module_for_preload", "broken", "x")
before = set(sys.modules)
preload_command(json.loads(sys.argv[1]), table)
print(json.dumps({
    "enabled": gc.isenabled(),
    "frozen": gc.get_freeze_count(),
    "imported": sorted(m for m in set(sys.modules) - before if m.startswith("harness.cli._")),
}))
"""


def _probe(args: list[str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return dict(json.loads(done.stdout.splitlines()[-1]))


def _python(code: str, cwd: Path, *paths: Path) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter with the repository (and `paths`) importable."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (REPO, *paths))},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_named_command_is_imported_then_the_heap_is_frozen_and_collection_resumes() -> None:
    seen = _probe(["run", "--no-baseline"])
    assert seen["enabled"] is True
    assert isinstance(seen["frozen"], int) and seen["frozen"] > 0
    assert "harness.cli._run_cmd" in seen["imported"]  # type: ignore[operator]


@pytest.mark.parametrize("args", [[], ["--help"], ["--version"], ["no-such-command"]])
def test_anything_but_a_command_name_imports_and_freezes_nothing(args: list[str]) -> None:
    assert _probe(args) == {"enabled": True, "frozen": 0, "imported": []}


def test_a_command_that_fails_to_import_leaves_the_collector_running_and_nothing_frozen() -> None:
    assert _probe(["broken"]) == {"enabled": True, "frozen": 0, "imported": []}


def test_the_entry_point_still_maps_a_failing_command_import_onto_the_exit_code_contract(
    tmp_path: Path,
) -> None:
    # The preload swallowed the error; click imports the command again and reports it (70).
    code = (
        "import sys\n"
        "from harness.cli import _app\n"
        "from harness.cli._commands import LazyCommand\n"
        "_app.COMMANDS['broken'] = LazyCommand('harness_no_such_module_for_preload', 'x', 'x')\n"
        "_app.cli.lazy['broken'] = _app.COMMANDS['broken']\n"
        "sys.argv = ['proctor', 'broken']\n"
        "_app.main()\n"
    )
    done = _python(code, tmp_path)
    assert done.returncode == 70, done.stderr
    assert "harness_no_such_module_for_preload" in done.stderr


def test_the_entry_point_preloads_the_command_it_runs(tmp_path: Path) -> None:
    code = (
        "import gc, sys\n"
        "from harness.cli import main\n"
        "sys.argv = ['proctor', 'run', '--help']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    print('exit', exc.code, 'frozen', gc.get_freeze_count() > 0, gc.isenabled())\n"
    )
    done = _python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "exit 0 frozen True True"


@pytest.mark.parametrize("entry", ["main", "group"])
def test_an_interrupt_while_the_command_imports_exits_as_the_group_reports_one(
    tmp_path: Path, entry: str
) -> None:
    # The same outcome whether the entry point's preload or the group's own import is cut off.
    (tmp_path / "interrupted_command.py").write_text("raise KeyboardInterrupt\n", encoding="utf-8")
    code = (
        "import sys\n"
        "from harness.cli import _app\n"
        "from harness.cli._commands import LazyCommand\n"
        "entry = LazyCommand('interrupted_command', 'x', 'x')\n"
        "_app.COMMANDS['cut'] = _app.cli.lazy['cut'] = entry\n"
        "sys.argv = ['proctor', 'cut']\n"
        + ("_app.main()\n" if entry == "main" else "_app.cli.main(prog_name='proctor')\n")
    )
    done = _python(code, tmp_path, tmp_path)
    assert done.returncode == 70, done.stderr
    assert done.stderr.strip() == "Aborted."
