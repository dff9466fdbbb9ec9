"""Find Debian's Chromium for the browser tests; skip locally when it is missing, fail in CI.

Playwright's own browser download is never used (it cannot be fetched here): Playwright drives
the `chromium` Debian package by executable path. `PROCTOR_CHROMIUM` names another binary.
With `PROCTOR_REQUIRE_CHROMIUM=1` (set by `.ci/run`) a missing browser is a failure, so CI can
never go green by quietly not running the browser tests.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NoReturn

import pytest

PATH_ENV = "PROCTOR_CHROMIUM"
REQUIRE_ENV = "PROCTOR_REQUIRE_CHROMIUM"
DEBIAN_PATH = Path("/usr/bin/chromium")
MISSING = "Chromium is not installed: apt-get install -y chromium (CI installs it)"


def chromium_required(environ: Mapping[str, str]) -> bool:
    return environ.get(REQUIRE_ENV, "") not in ("", "0")


def unavailable(why: str, environ: Mapping[str, str]) -> NoReturn:
    if chromium_required(environ):
        pytest.fail(f"{why} ({REQUIRE_ENV} is set, so this is a failure, not a skip)")
    pytest.skip(why)


def find_chromium(
    environ: Mapping[str, str] = os.environ,
    debian_path: Path = DEBIAN_PATH,
    which: Callable[[str], str | None] = shutil.which,
) -> Path:
    """`PROCTOR_CHROMIUM`, else /usr/bin/chromium, else `chromium` on PATH; else skip or fail.

    A `PROCTOR_CHROMIUM` that names no executable always fails: it is a setting someone made on
    purpose, and falling back to another browser would test something they did not ask for.
    """
    configured = environ.get(PATH_ENV, "")
    if configured:
        path = Path(configured)
        if not (path.is_file() and os.access(path, os.X_OK)):
            pytest.fail(f"{PATH_ENV}={configured} is not an executable file")
        return path
    if debian_path.is_file() and os.access(debian_path, os.X_OK):
        return debian_path
    found = which("chromium")
    if found:
        return Path(found)
    unavailable(MISSING, environ)
