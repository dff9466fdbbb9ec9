"""The switch for tests that need AgentDojo: skip with the install line, or fail when the run
requires AgentDojo (PROCTOR_REQUIRE_AGENTDOJO=1)."""

from __future__ import annotations

import pytest

from tests.agentdojo_required import INSTALL, REQUIRE_ENV, require_agentdojo

MISSING = "agentdojo_not_installed_here"


def test_a_missing_agentdojo_skips_with_the_line_that_installs_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(REQUIRE_ENV, raising=False)

    with pytest.raises(pytest.skip.Exception) as caught:
        require_agentdojo(MISSING)

    assert INSTALL in str(caught.value)


def test_a_missing_agentdojo_fails_when_the_run_requires_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(REQUIRE_ENV, "1")

    with pytest.raises(pytest.fail.Exception) as caught:
        require_agentdojo(MISSING)

    assert f"{REQUIRE_ENV}=1" in str(caught.value)
    assert INSTALL in str(caught.value)


def test_an_installed_module_is_returned() -> None:
    assert require_agentdojo("json").dumps([]) == "[]"
