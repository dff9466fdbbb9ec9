"""The one export-failure warning line never carries a configured header value."""

from __future__ import annotations

import pytest

from governance.telemetry._warning import warn_once

CREDENTIAL = "Zq9FakeLeakValue77"


class _Owner:
    """Stands for a Telemetry: hashable, weakly referable."""


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
    warn_once(_Owner(), problem, secrets=[CREDENTIAL + "\t", CREDENTIAL])
    err = capsys.readouterr().err
    assert "OpenTelemetry export failed" in err
    assert CREDENTIAL not in err


class _Recorder:
    def __init__(self) -> None:
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def test_each_owner_warns_once_in_a_single_write(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = _Recorder()
    monkeypatch.setattr("sys.stderr", recorder)
    owner = _Owner()
    warn_once(owner, "connection refused")
    warn_once(owner, "connection refused again")
    # One write per line: `-j` workers share stderr and must not interleave halves of lines.
    assert len(recorder.writes) == 1 and recorder.writes[0].endswith("not reported\n")


def test_a_new_owner_warns_even_where_a_gone_one_lived(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = _Recorder()
    monkeypatch.setattr("sys.stderr", recorder)
    for _ in range(3):  # each new owner may take the last one's id(): it still gets its line
        warn_once(_Owner(), "connection refused")
    assert len(recorder.writes) == 3
