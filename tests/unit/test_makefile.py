"""`make` tells a first-time user where `proctor` lives: it is in the venv, not on PATH."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _dry_run(*args: str) -> list[str]:
    make = shutil.which("make")
    assert make is not None, "make is needed to build Proctor"
    done = subprocess.run(
        [make, "-n", "--no-print-directory", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


@pytest.mark.parametrize(
    "args",
    [("-W", "pyproject.toml", ".venv/.proctor-installed"), ("-W", "pyproject.toml", "demo")],
    ids=["install", "demo"],
)
def test_install_and_demo_end_by_saying_how_to_run_proctor(args: tuple[str, ...]) -> None:
    lines = _dry_run(*args)
    last = lines[-1]
    assert last.startswith("echo ")
    assert ".venv/bin/proctor" in last
    assert "source .venv/bin/activate" in last


def test_console_runs_on_its_own_state_dir_and_a_copy_of_the_shipped_policy() -> None:
    lines = _dry_run("console")

    copy = "test -f .proctor-console/policy.yaml || cp governance/data/default_policy.yaml"
    assert any(line.startswith(copy) for line in lines), lines
    assert lines[-1].startswith(
        ".venv/bin/proctor console --state-dir .proctor-console"
        " --policy .proctor-console/policy.yaml"
    )
