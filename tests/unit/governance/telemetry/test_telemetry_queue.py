"""The hot path's side of Telemetry: a bounded queue that drops and counts, a thread that starts
only with the first event, and a missing extra named with its install line."""

from __future__ import annotations

import dataclasses
import sys
import threading
from pathlib import Path

import pytest

import governance.telemetry._sdk as sdk
from governance import ExtraUnavailable
from governance.telemetry import INSTALL_HINT, Telemetry, TelemetryConfig, telemetry_config
from tests.integration.telemetry.governed_session import chain, drive, gateway


def _config(**changes: object) -> TelemetryConfig:
    config = telemetry_config(flag=True, environ={"PROCTOR_OTEL_ENDPOINT": "http://127.0.0.1:9"})
    assert config is not None
    return dataclasses.replace(config, **changes)  # type: ignore[arg-type]


def test_starting_telemetry_starts_no_thread_until_the_first_event() -> None:
    before = threading.active_count()
    telemetry = Telemetry.start(_config(), service_role="eval")
    assert threading.active_count() == before and telemetry._thread is None
    telemetry.shutdown()  # nothing to flush: returns without starting one either
    assert telemetry._thread is None


def test_a_full_queue_drops_and_counts_and_the_calls_are_unaffected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    real = sdk.start_exporting

    def stalled(telemetry: sdk.Telemetry) -> sdk.Exporting:
        release.wait(30)  # the exporter is busy: nothing drains the queue meanwhile
        return real(telemetry)

    monkeypatch.setattr(sdk, "start_exporting", stalled)
    telemetry = Telemetry.start(_config(queue_limit=3, timeout_seconds=0.2), service_role="serve")
    try:
        with gateway(tmp_path / "on", telemetry) as opened:
            outcomes = {k: (r.outcome, r.reason, r.error) for k, r in drive(opened).items()}
            observed = chain(opened)
    finally:
        release.set()
        telemetry.shutdown(timeout_seconds=5)
    with gateway(tmp_path / "off") as opened:
        assert {k: (r.outcome, r.reason, r.error) for k, r in drive(opened).items()} == outcomes
        assert chain(opened) == observed
    assert telemetry.dropped == len(observed) - 3


def test_without_the_otel_extra_start_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    monkeypatch.delitem(sys.modules, "governance.telemetry._sdk")  # imported afresh: fails
    with pytest.raises(ExtraUnavailable, match="otel") as raised:
        Telemetry.start(_config(), service_role="ask")
    assert INSTALL_HINT in str(raised.value)
