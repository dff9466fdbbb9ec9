"""Fixtures shared by the integration tests."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def repo_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shipped scenarios and baselines, copied; cwd is the copy; no PROCTOR_* setting."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "scenarios", root / "scenarios")
    shutil.copytree(REPO / "baselines", root / "baselines")
    monkeypatch.chdir(root)
    for name in list(os.environ):
        if name.startswith("PROCTOR_"):
            monkeypatch.delenv(name)
    return root
