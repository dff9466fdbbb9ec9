"""The one export-failure warning line never carries a configured header value."""

from __future__ import annotations

import pytest

from governance.telemetry._warning import warn_once

CREDENTIAL = "Zq9FakeLeakValue77"


@pytest.mark.parametrize(
    "problem",
    [
        f"InvalidHeader: Invalid leading whitespace in header value: {CREDENTIAL}",
        f"InvalidHeader: header value {CREDENTIAL + chr(9)!r} is not allowed",
    ],
)
def test_a_configured_header_value_quoted_by_an_exception_is_scrubbed_from_the_warning(
    problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    warn_once(object(), problem, secrets=[CREDENTIAL + "\t", CREDENTIAL])
    err = capsys.readouterr().err
    assert "OpenTelemetry export failed" in err
    assert CREDENTIAL not in err
