"""A serial `proctor run` with a core to spare checks half of a cold suite and writes
report.html in forked helpers; pinned to one CPU it forks nothing. Either way every report
file has the same bytes and the run the same exit code.

Run in a fresh interpreter: this test process may hold other tests' threads, and then nothing
forks, by design (harness._suite_check_split, harness.reports._side_process)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

RUNS = """
import os, sys
from pathlib import Path
import harness.cli._run_cmd as run_cmd
run_cmd.new_run_id = lambda: "run-fixed"  # the one field that differs between runs
from harness.cli._app import cli
forks = []
os.register_at_fork(after_in_parent=lambda: forks.append(1))
cpus = os.sched_getaffinity(0)
for name, mask in (("pinned", {min(cpus)}), ("spare", cpus)):
    os.sched_setaffinity(0, mask)
    os.environ["PROCTOR_CACHE_DIR"] = str(Path(name + "-cache").resolve())  # cold: checked
    before = len(forks)
    code = cli.main(
        ["run", "--no-baseline", "--scenarios", "suite", "--report-dir", name],
        standalone_mode=False,
    )
    print("outcome", name, code, len(forks) - before)
"""


def _suite(into: Path) -> None:
    """Two scenario files (a check splits by file) with the policies and scripts they use."""
    into.mkdir()
    for name in ("reads.yaml", "blocks.yaml"):
        shutil.copy(REPO / "scenarios" / name, into / name)
    for folder in ("policies", "scripts"):
        if (REPO / "scenarios" / folder).is_dir():
            shutil.copytree(REPO / "scenarios" / folder, into / folder)


@pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs two CPUs to pin one of them",
)
def test_a_serial_run_uses_a_spare_core_for_helpers_and_writes_the_same_reports(
    tmp_path: Path,
) -> None:
    _suite(tmp_path / "suite")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROCTOR_")}
    done = subprocess.run(
        [sys.executable, "-c", RUNS],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outcome = dict(
        line.split(" ", 2)[1:] for line in done.stdout.splitlines() if line.startswith("outcome ")
    )
    # exit 0 both times; pinned: nothing forked; spare: the check's helper and report.html's
    assert outcome == {"pinned": "0 0", "spare": "0 2"}, done.stdout[-2000:]
    pinned, spare = tmp_path / "pinned", tmp_path / "spare"
    names = sorted(str(p.relative_to(pinned)) for p in pinned.rglob("*") if p.is_file())
    assert names == sorted(str(p.relative_to(spare)) for p in spare.rglob("*") if p.is_file())
    assert "report.html" in names and "manifest.json" in names
    for name in names:
        assert (spare / name).read_bytes() == (pinned / name).read_bytes(), name
