"""Which Chromium the browser tests use, and what happens when there is none."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser._chromium import MISSING, find_chromium


def _executable(path: Path) -> Path:
    path.write_text("#!/bin/sh\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def _nothing_on_path(name: str) -> None:
    return None


def test_proctor_chromium_wins_over_the_debian_path_and_path(tmp_path: Path) -> None:
    chosen = _executable(tmp_path / "my-chromium")
    debian = _executable(tmp_path / "debian-chromium")

    found = find_chromium(
        {"PROCTOR_CHROMIUM": str(chosen)}, debian, lambda _: str(tmp_path / "on-path")
    )

    assert found == chosen


def test_the_debian_path_wins_over_path(tmp_path: Path) -> None:
    debian = _executable(tmp_path / "debian-chromium")

    assert find_chromium({}, debian, lambda _: str(tmp_path / "on-path")) == debian


def test_chromium_on_path_is_the_last_resort(tmp_path: Path) -> None:
    on_path = str(tmp_path / "on-path")

    assert find_chromium({}, tmp_path / "absent", lambda _: on_path) == Path(on_path)


@pytest.mark.parametrize("setting", ["absent", "not-executable", "directory"])
def test_a_proctor_chromium_that_is_not_an_executable_fails_even_locally(
    tmp_path: Path, setting: str
) -> None:
    debian = _executable(tmp_path / "debian-chromium")
    target = tmp_path / setting
    if setting == "not-executable":
        target.write_text("", encoding="utf-8")
    elif setting == "directory":
        target.mkdir()

    with pytest.raises(pytest.fail.Exception, match="is not an executable file"):
        find_chromium({"PROCTOR_CHROMIUM": str(target)}, debian, _nothing_on_path)


def test_no_chromium_skips_locally_with_the_install_command(tmp_path: Path) -> None:
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y chromium") as skipped:
        find_chromium({}, tmp_path / "absent", _nothing_on_path)
    assert str(skipped.value) == MISSING


@pytest.mark.parametrize("required", ["1", "yes"])
def test_no_chromium_fails_when_ci_requires_it(tmp_path: Path, required: str) -> None:
    with pytest.raises(pytest.fail.Exception, match="PROCTOR_REQUIRE_CHROMIUM is set"):
        find_chromium({"PROCTOR_REQUIRE_CHROMIUM": required}, tmp_path / "absent", _nothing_on_path)


def test_require_chromium_set_to_zero_still_skips(tmp_path: Path) -> None:
    with pytest.raises(pytest.skip.Exception):
        find_chromium({"PROCTOR_REQUIRE_CHROMIUM": "0"}, tmp_path / "absent", _nothing_on_path)
