"""A gateway whose clock disagrees with the PostgreSQL server's refuses to open the store.

The stores take their times from the injected clock (deterministic tests, replay), so replicas
sharing one database compare times written by different machines' clocks: a replica whose
clock runs fast sees a budget window's old rows as already outside the window. Rather than
read the server's time on every call, each connection (at open and at every reconnect)
compares the gateway's clock with the server's `clock_timestamp()` and refuses a difference
beyond a tolerance: PROCTOR_STORE_MAX_CLOCK_SKEW seconds (default 2), "sync the clocks (NTP)".

A clock can also step after the connection opened (an NTP step, a VM resumed from a
snapshot), so a long-lived connection is checked again (`ClockWatch`): by the approval store's
heartbeat; before any store's call once RECHECK_SECONDS have passed since the last check that
passed; and at once when the gateway's clock moved against the monotonic clock (which no step
moves) by more than STEP_SECONDS since then - a step is caught by the very next call, at the
cost of reading two local clocks. A failed check is repeated before every later call, each
failing closed, until the clocks agree again.

Only the real clock (`SystemClock`) is checked unless a store is given `max_clock_skew`
explicitly: an injected test or replay clock is not the machine's time.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from typing import TYPE_CHECKING, Any, Final, Literal

from governance.core._clock import Clock, SystemClock
from governance.stores._postgres import PostgresUnavailable, first_line

if TYPE_CHECKING:
    from governance.stores._postgres import PostgresTarget

SKEW_ENV: Final = "PROCTOR_STORE_MAX_CLOCK_SKEW"
DEFAULT_MAX_SKEW_SECONDS: Final = 2.0
# How long a passed check is trusted on an open connection (one `SELECT clock_timestamp()`).
RECHECK_SECONDS: Final = 10.0
# A jump of the gateway's clock against the monotonic clock that is compared with the server's
# at once.
STEP_SECONDS: Final = 0.25
# "auto": the real clock is checked with the environment's tolerance; any other clock is not.
SkewSetting = float | None | Literal["auto"]


class ClockSkewError(PostgresUnavailable):
    """The gateway's clock and the server's differ by more than the tolerance."""


def failure_reason(exc: BaseException, target: PostgresTarget) -> str:
    """Why a call failed: a skew message as written (it names the server by its display,
    which never holds the password), anything else scrubbed of the password and the DSN."""
    return str(exc) if isinstance(exc, ClockSkewError) else first_line(exc, target)


def tolerance(clock: Clock, setting: SkewSetting) -> float | None:
    """Seconds of difference allowed, or None: not checked."""
    if setting != "auto":
        return setting
    if not isinstance(clock, SystemClock):
        return None
    raw = os.environ.get(SKEW_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_SKEW_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0 or value != value or value == float("inf"):
        raise PostgresUnavailable(
            f"{SKEW_ENV}={raw!r} is not a number of seconds greater than 0 (default "
            f"{DEFAULT_MAX_SKEW_SECONDS:g})"
        )
    return value


def check_clock(conn: Any, clock: Clock, target: PostgresTarget, setting: SkewSetting) -> None:
    """Refuse the connection when the clocks differ by more than the tolerance (the time the
    server took to answer is not counted against the gateway)."""
    allowed = tolerance(clock, setting)
    if allowed is None:
        return
    before = clock.now()
    row = conn.execute("SELECT clock_timestamp()").fetchone()
    after = clock.now()
    server: dt.datetime = row[0]
    midpoint = before + (after - before) / 2
    skew = abs((server - midpoint).total_seconds()) - abs((after - before).total_seconds()) / 2
    if skew > allowed:
        raise ClockSkewError(
            f"the clock here ({midpoint.isoformat()}) and the PostgreSQL store "
            f"{target.display}'s ({server.astimezone(dt.UTC).isoformat()}) differ by "
            f"{skew:.1f} s, more than {allowed:g} s ({SKEW_ENV}): sync the clocks (NTP); "
            "budget windows and approval deadlines would be judged wrongly"
        )


class ClockWatch:
    """When a store's connection must compare clocks again (call under the store's lock)."""

    def __init__(self, clock: Clock, target: PostgresTarget, setting: SkewSetting) -> None:
        self._clock = clock
        self._target = target
        self._setting = setting
        self._passed_at: float | None = None  # monotonic time of the last check that passed
        self._offset = 0.0  # the clock's time minus the monotonic time at that check

    def _offset_now(self) -> tuple[float, float]:
        mono = time.monotonic()
        return mono, self._clock.now().timestamp() - mono

    def check(self, conn: Any) -> None:
        """Compare now; raise ClockSkewError (and stay due) when the clocks disagree."""
        self._passed_at = None
        check_clock(conn, self._clock, self._target, self._setting)
        self._passed_at, self._offset = self._offset_now()

    def check_if_due(self, conn: Any) -> None:
        passed = self._passed_at
        if passed is not None:
            if tolerance(self._clock, self._setting) is None:
                return  # not checked at all: no clock is read
            mono, offset = self._offset_now()
            stepped = abs(offset - self._offset) > STEP_SECONDS
            if not stepped and mono - passed < RECHECK_SECONDS:
                return
        self.check(conn)

    def make_due(self) -> None:
        """The next call compares the clocks first (a new connection; the heartbeat)."""
        self._passed_at = None
