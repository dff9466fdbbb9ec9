"""Fixtures the CLI tests share: a fresh copy of the small suite with its baseline."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.small_suite import build_small_suite


@pytest.fixture(scope="module")
def small_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("small-suite")
    build_small_suite(root)
    return root


@pytest.fixture
def small(small_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh copy of the small suite and its baseline; cwd is the copy; no PROCTOR_* vars."""
    root = tmp_path / "work"
    shutil.copytree(small_template, root)
    monkeypatch.chdir(root)
    for name in list(os.environ):
        if name.startswith("PROCTOR_"):
            monkeypatch.delenv(name)
    return root
