"""How values read on the console's pages."""

from __future__ import annotations

import datetime as dt


def shown_time(value: dt.datetime | None) -> str:
    """A timestamp as an operator reads it (the ISO form stays in the datetime attribute)."""
    return "-" if value is None else value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
