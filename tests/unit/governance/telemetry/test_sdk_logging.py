"""Proctor's export silences only its own OpenTelemetry SDK records: an embedding application's
records on the same loggers still reach its handlers."""

from __future__ import annotations

import logging

import pytest

from governance.telemetry import Telemetry, telemetry_config
from governance.telemetry._sdk import Exporting, _own_export

DEAD = "http://127.0.0.1:9"
SDK_LOGGER = "opentelemetry.sdk.trace.export"


def _exporting() -> Exporting:
    config = telemetry_config(flag=True, environ={"OTEL_EXPORTER_OTLP_ENDPOINT": DEAD})
    assert config is not None
    return Exporting(Telemetry(config, service_role="serve"))


def test_the_applications_own_sdk_warnings_still_reach_its_handlers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    exporting = _exporting()
    try:
        with caplog.at_level(logging.WARNING):
            logging.getLogger(SDK_LOGGER).warning("the application's exporter failed")
    finally:
        exporting.finish()
    assert "the application's exporter failed" in caplog.text


def test_a_record_from_proctors_own_export_is_dropped_before_the_applications_handlers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    exporting = _exporting()
    try:
        with caplog.at_level(logging.WARNING), _own_export():
            logging.getLogger(SDK_LOGGER).warning("proctor's batch failed")
    finally:
        exporting.finish()
    assert "proctor's batch failed" not in caplog.text
