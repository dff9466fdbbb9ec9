"""Audit timestamps are fixed-width UTC text, whatever zone the clock's datetime is in."""

from __future__ import annotations

import datetime as dt

import pytest

from governance.stores._sqlite import utc_text


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        (dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC), "2026-12-01T12:00:00.000000Z"),
        (dt.datetime(2026, 12, 1, 12, 0, 0, 7, tzinfo=dt.UTC), "2026-12-01T12:00:00.000007Z"),
        (
            dt.datetime(2026, 12, 1, 1, 30, tzinfo=dt.timezone(dt.timedelta(hours=2))),
            "2026-11-30T23:30:00.000000Z",
        ),
        (
            dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone(dt.timedelta(0), "Z")),
            "2026-12-01T12:00:00.000000Z",
        ),
    ],
)
def test_utc_text_writes_every_moment_in_utc_at_a_fixed_width(
    moment: dt.datetime, text: str
) -> None:
    assert utc_text(moment) == text
