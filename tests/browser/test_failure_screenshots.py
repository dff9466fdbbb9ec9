"""A browser test that fails leaves a picture of every page it had open."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

CONFTEST = """\
import os
from pathlib import Path

import pytest

from tests.browser.conftest import *  # noqa: F403 - the fixtures and hooks under test


@pytest.fixture
def screenshot_dir() -> Path:
    return Path(os.environ["SELFTEST_SCREENSHOTS"])
"""

TESTS = """\
def test_fails_with_pages_in_two_contexts(new_context):
    new_context().new_page().set_content("<h1>first operator</h1>")
    new_context().new_page().set_content("<h1>second operator</h1>")
    assert False, "failing on purpose"


def test_passes_with_a_page_open(new_context):
    new_context().new_page().set_content("<h1>fine</h1>")
"""


def test_a_failed_test_leaves_one_screenshot_per_open_page_and_a_passed_one_none(
    tmp_path: Path, chromium_path: Path
) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (suite / "test_inner.py").write_text(TESTS, encoding="utf-8")
    shots = tmp_path / "shots"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PROCTOR_CHROMIUM": str(chromium_path),
        "SELFTEST_SCREENSHOTS": str(shots),
    }

    # Its own process: a second Playwright cannot start in this thread while ours is open.
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(suite)],
        cwd=suite, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip

    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 failed, 1 passed" in run.stdout, run.stdout
    failures = sorted(path.name for path in (shots / "failures").iterdir())
    assert failures == [
        "test_fails_with_pages_in_two_contexts-1-1.png",
        "test_fails_with_pages_in_two_contexts-2-1.png",
    ]
    for name in failures:
        assert (shots / "failures" / name).read_bytes().startswith(PNG_SIGNATURE)
