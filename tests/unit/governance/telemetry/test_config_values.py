"""OTEL_* values that cannot work are usage errors naming the variable, and a
header's value (a credential) is never printed."""

from __future__ import annotations

import time

import pytest

from governance import LifecycleEvent
from governance.telemetry import (
    Telemetry,
    TelemetryConfig,
    TelemetryConfigError,
    telemetry_config,
)

# Nothing listens on port 9 (discard) on loopback.
DEAD = "http://127.0.0.1:9"
CREDENTIAL = "Zq9FakeLeakValue77"


@pytest.mark.parametrize("value", ["²", "¹⁰"])
def test_a_whole_number_variable_with_non_ascii_digits_is_a_config_error_naming_it(
    value: str,
) -> None:
    with pytest.raises(TelemetryConfigError, match="OTEL_BSP_SCHEDULE_DELAY"):
        telemetry_config(flag=True, environ={"OTEL_BSP_SCHEDULE_DELAY": value})


@pytest.mark.parametrize("value", ["inf", "1e400", "Infinity"])
def test_an_infinite_export_timeout_is_a_config_error_naming_it(value: str) -> None:
    # Accepted, every export then fails (OverflowError in the socket layer) and all telemetry
    # is dropped behind one vague warning line.
    with pytest.raises(TelemetryConfigError, match="OTEL_EXPORTER_OTLP_TIMEOUT"):
        telemetry_config(flag=True, environ={"OTEL_EXPORTER_OTLP_TIMEOUT": value})


@pytest.mark.parametrize("encoded", [f"{CREDENTIAL}%0A", f"{CREDENTIAL}%0D%0Ax-evil=1"])
def test_a_header_value_no_http_client_can_send_is_a_config_error_that_never_shows_it(
    encoded: str,
) -> None:
    with pytest.raises(TelemetryConfigError, match="OTEL_EXPORTER_OTLP_HEADERS") as caught:
        telemetry_config(flag=True, environ={"OTEL_EXPORTER_OTLP_HEADERS": f"x-api-key={encoded}"})
    assert CREDENTIAL not in str(caught.value)


def test_the_export_failure_warning_never_prints_a_header_value(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The config refuses such a header (above); built in code, past that check, the exporter's
    HTTP client refuses it and quotes it in its exception: the one warning line must not carry
    it."""
    config = TelemetryConfig(
        traces_endpoint=f"{DEAD}/v1/traces",
        metrics_endpoint=f"{DEAD}/v1/metrics",
        headers=(("x-api-key", f"{CREDENTIAL}\n"),),
        timeout_seconds=1.0,
    )
    telemetry = Telemetry.start(config, service_role="ask")
    now = time.time_ns()
    telemetry.observe(LifecycleEvent("run.started", "r1", "", "", {}, now))
    telemetry.observe(LifecycleEvent("run.finished", "r1", "", "", {"status": "completed"}, now))
    telemetry.shutdown(timeout_seconds=10)
    err = capsys.readouterr().err
    assert "OpenTelemetry export failed" in err  # the export did fail, and said so once
    assert CREDENTIAL not in err


def test_a_metrics_only_compression_variable_is_checked_like_the_traces_one() -> None:
    with pytest.raises(TelemetryConfigError, match="OTEL_EXPORTER_OTLP_METRICS_COMPRESSION"):
        telemetry_config(flag=True, environ={"OTEL_EXPORTER_OTLP_METRICS_COMPRESSION": "brotli"})


def test_a_traces_only_compression_leaves_the_metrics_uncompressed() -> None:
    config = telemetry_config(flag=True, environ={"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip"})
    assert config is not None
    assert config.metrics_compression == "none"


def test_a_signal_specific_timeout_is_that_signals_timeout() -> None:
    config = telemetry_config(
        flag=True,
        environ={"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "2", "OTEL_EXPORTER_OTLP_TIMEOUT": "9"},
    )
    assert config is not None
    assert getattr(config, "traces_timeout_seconds", config.timeout_seconds) == 2.0


def test_starting_the_export_leaves_the_applications_opentelemetry_logging_alone() -> None:
    """An application embedding the firewall may run its own OpenTelemetry SDK: Proctor's
    export must not cut the SDK's loggers off from the application's handlers."""
    import logging

    from governance.telemetry._sdk import Exporting

    names = ("opentelemetry.sdk", "opentelemetry.exporter")
    found = {name: logging.getLogger(name).propagate for name in names}
    for name in names:  # as a process that never started Proctor's export has them
        logging.getLogger(name).propagate = True
    before = {name: True for name in names}
    config = telemetry_config(flag=True, environ={"OTEL_EXPORTER_OTLP_ENDPOINT": DEAD})
    assert config is not None
    exporting = Exporting(Telemetry(config, service_role="serve"))
    try:
        assert {name: logging.getLogger(name).propagate for name in names} == before
    finally:
        exporting.finish()
        for name in names:
            logging.getLogger(name).propagate = found[name]


@pytest.mark.parametrize(
    "variable", ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
)
def test_a_bad_endpoint_error_never_shows_the_urls_password(variable: str) -> None:
    with pytest.raises(TelemetryConfigError, match=variable) as caught:
        telemetry_config(flag=True, environ={variable: f"ftp://otel:{CREDENTIAL}@collector:4318"})
    assert CREDENTIAL not in str(caught.value)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_BSP_MAX_QUEUE_SIZE", "٣"),  # int() reads Arabic-Indic digits: still refused
        ("OTEL_METRIC_EXPORT_INTERVAL", "99999999999999999999"),
        ("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "nan"),
        ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "0"),
    ],
)
def test_every_numeric_variable_out_of_range_or_unparsable_is_a_config_error_naming_it(
    variable: str, value: str
) -> None:
    with pytest.raises(TelemetryConfigError, match=variable):
        telemetry_config(flag=True, environ={variable: value})


def test_a_header_name_that_is_not_a_token_is_a_config_error() -> None:
    with pytest.raises(TelemetryConfigError, match="OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
        telemetry_config(flag=True, environ={"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x%20key=value"})


def test_an_unparsable_endpoint_is_a_config_error_not_a_crash() -> None:
    with pytest.raises(TelemetryConfigError, match="OTEL_EXPORTER_OTLP_ENDPOINT"):
        telemetry_config(flag=True, environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://[::1"})


def test_the_general_timeout_and_compression_apply_to_a_signal_without_its_own() -> None:
    config = telemetry_config(
        flag=True,
        environ={
            "OTEL_EXPORTER_OTLP_TIMEOUT": "9",
            "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
            "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION": "none",
        },
    )
    assert config is not None
    assert (config.traces_timeout_seconds, config.metrics_timeout_seconds) == (9.0, 9.0)
    assert (config.traces_compression, config.metrics_compression) == ("gzip", "none")
